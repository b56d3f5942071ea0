// Keyboard shortcuts for the reconciliation page live here.
