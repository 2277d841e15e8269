"""What every screen of the studio shares: the session and its login, forms
with their CSRF and Origin checks, rendering on the layout with the sidebar
the modules declare, preferences and the tree widget. It sits above
`auth` and imports no feature module: each feature package holds its own
screens (`screens.py` or `screens/`) and templates."""
