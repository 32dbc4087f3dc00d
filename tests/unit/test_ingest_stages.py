"""The build pipeline's stages stop when told to, even with full queues and a slow last stage (Ctrl-C)."""

from __future__ import annotations

import queue
import time

from claire.ingestion.pipeline import END_OF_WORK, PipelineStage


def test_stopped_stages_end_with_full_queues_and_a_slow_store():
    to_encode, to_store = queue.Queue(2), queue.Queue(2)
    encoding = PipelineStage("encode", lambda item: None, to_encode, to_store)
    storing = PipelineStage("store", lambda item: time.sleep(0.05), to_store, None)
    encoding.start()
    storing.start()
    for item in range(6):  # fills both queues while the store is busy
        to_encode.put(item)
    encoding.stopping = storing.stopping = True
    deadline = time.monotonic() + 5
    while encoding.is_alive() and time.monotonic() < deadline:  # the end mark, once there is room
        try:
            to_encode.put(END_OF_WORK, timeout=0.1)
            break
        except queue.Full:
            continue
    encoding.join(timeout=5)
    storing.join(timeout=5)
    assert not encoding.is_alive() and not storing.is_alive()
