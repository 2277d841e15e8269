"""Translations (`l10n`): projects of keys translated per locale."""
