"""The control page: static files the relay serves at ``/`` (found by ``relay.webfiles``)."""
