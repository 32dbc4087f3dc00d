/* The extension's settings: which CLAIRE server to call and its token (kept in chrome.storage.sync). */
const DEFAULTS = { server: "http://127.0.0.1:8000", token: "" };
chrome.storage.sync.get(DEFAULTS, (settings) => {
  document.getElementById("server").value = settings.server;
  document.getElementById("token").value = settings.token;
});
document.getElementById("form").addEventListener("submit", (event) => {
  event.preventDefault();
  const server = document.getElementById("server").value.trim().replace(/\/+$/, "");
  chrome.storage.sync.set({ server, token: document.getElementById("token").value }, () => {
    document.getElementById("saved").textContent = "Saved.";
  });
});
