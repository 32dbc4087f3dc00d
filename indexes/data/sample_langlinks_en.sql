-- A langlinks table dump in MediaWiki's published shape (enwiki-latest-langlinks.sql), written by
-- the project for tests and docs: the English sample dump's pages and their counterparts.
INSERT INTO `langlinks` VALUES (101,'de','Marie Curie'),(101,'pl','Maria Skłodowska-Curie'),(102,'de','Zürich');
