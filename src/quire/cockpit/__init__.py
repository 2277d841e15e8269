"""Taking in a Cockpit 2 site: `quire import --from-cockpit <folder>`.

`folder.py` reads a Cockpit installation's storage as it is on disk (never
changing it), `models.py` and `values.py` turn Cockpit's models and
documents into Quire's, `report.py` keeps everything that did not come
over as it was, and `migrate.py` plans and runs the import through the
services, as every other write does.
"""
