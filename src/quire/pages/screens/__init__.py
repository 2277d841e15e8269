"""The pages screens: the page tree, the page editor, menus and settings."""
