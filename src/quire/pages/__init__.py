"""Pages: a tree of pages with routes per locale, menus, settings, sitemaps."""
