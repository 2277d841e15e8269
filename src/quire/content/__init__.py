"""Content: models (singleton, collection, tree) and their items."""
