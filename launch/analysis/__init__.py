"""Reading finished runs: curves, targets, tables and plots (runs.py), the
pipeline model, and the GST reproduction's plan and report."""
