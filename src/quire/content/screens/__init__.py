"""The content screens of the studio: models, lists, trees, the item editor,
its drafts and pickers, roles and preview addresses."""
