"""Full-text search (`searchmod`): indexes that follow content, ranked
queries."""
