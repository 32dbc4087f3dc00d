-- A langlinks table dump in MediaWiki's published shape (dewiki-latest-langlinks.sql), written by
-- the project for tests and docs: the German sample dump's pages and their counterparts.
DROP TABLE IF EXISTS `langlinks`;
CREATE TABLE `langlinks` (
  `ll_from` int(8) unsigned NOT NULL DEFAULT 0,
  `ll_lang` varbinary(35) NOT NULL DEFAULT '',
  `ll_title` varbinary(255) NOT NULL DEFAULT '',
  PRIMARY KEY (`ll_from`,`ll_lang`)
) ENGINE=InnoDB DEFAULT CHARSET=binary;
INSERT INTO `langlinks` VALUES (2001,'en','Marie Curie'),(2001,'fr','Marie Curie'),(2001,'pl','Maria Skłodowska-Curie'),(2002,'en','Zürich'),(2002,'fr','Zurich'),(2003,'en','O\'Brien');
