"""The relay's features, each one module declaring one ``Feature`` (relay/feature.py).

The core (relay/*.py) never imports these; relay/app.py lists them in ``FEATURES``.
"""
