"""The claude-bridge relay: numbers each session's events and streams them to phones.

Modules, in the order a request meets them: ``app`` (the ASGI app), ``auth`` (logins),
``routes`` (phone API), ``link`` (the Macs' WebSocket), ``convert`` (transcript line → events),
``seq`` (numbering and catch-up rules), ``store`` and ``writer`` (SQLite), ``hub`` and ``sse``
(live streams), ``history`` (older pages from the Mac), ``live`` (what connected Macs report);
``deps`` holds what every route needs, ``state`` the running relay. That is the core; the
features (search, titles, usage and cost, retention, subagents, push, permissions, audit) are in
``relay/features/``, each one ``Feature`` (``relay/feature.py``) that ``app`` lists.
The link messages, the settings table and the policy model it shares with the agent are in
``wire/``; the relay never imports the agent.
"""
