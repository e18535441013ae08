"""The claude-bridge relay: numbers each session's events and streams them to phones.

Modules, in the order a request meets them: ``app`` (the ASGI app), ``auth`` (logins),
``routes`` (phone API), ``link`` (the Macs' WebSocket), ``convert`` (transcript line → events),
``seq`` (numbering and catch-up rules), ``store`` and ``writer`` (SQLite), ``hub`` and ``sse``
(live streams), ``history`` (older pages from the Mac), ``live`` (what connected Macs report),
``protocol`` (the wire messages both sides import), ``config`` (every setting).
"""
