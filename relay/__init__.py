"""The claude-bridge relay: numbers each session's events and streams them to phones.

Modules, in the order a request meets them: ``app`` (the ASGI app), ``auth`` (logins),
``routes`` (phone API), ``link`` (the Macs' WebSocket), ``convert`` (transcript line → events),
``seq`` (numbering and catch-up rules), ``store/`` (one module per set of tables, and the
``Store`` that runs them; ``writer`` and ``db/`` beneath it), ``hub`` and ``sse`` (live streams),
``history`` (older pages from the Mac), ``live`` (what connected Macs report), ``cluster`` with
``nodebus`` and ``peers`` (several relay nodes on PostgreSQL); ``deps`` holds what every route
needs, ``state`` the running core. That is the core; every point where a feature plugs in is
declared in ``hookspecs``, and the features (search, titles, usage and cost, retention,
subagents, push, permissions, audit, files, fulltext, outbox, grants, moves) are in
``relay/features/``, each one ``Feature`` (``relay/feature.py``) that ``app`` lists.
The link messages, the settings table and the policy model it shares with the agent are in
``wire/``; the relay never imports the agent.
"""
