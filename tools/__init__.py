"""Maintainer tools: run, record and check the notebooks (not imported by notebooks)."""
