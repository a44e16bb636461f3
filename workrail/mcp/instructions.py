"""What the server tells every client at `initialize` (its instructions) and every tool
description repeats (the loop). Plain strings in a module of their own, so the start-up
handshake can answer `initialize` before the SDK is imported."""

from __future__ import annotations

LOOP = (
    "The loop: start_workflow → do the pending step → continue_workflow with intent "
    '"advance", the stateToken and ackToken, and output.notesMarkdown describing what you '
    "did → repeat until isComplete is true. Every response carries nextCall: send it (adding "
    "your notes) instead of stopping to summarise."
)

INSTRUCTIONS = (
    "WorkRail walks you through a workflow one step at a time and keeps a durable record. "
    "Use list_workflows, then start_workflow. " + LOOP + " If you lose your place, call "
    'continue_workflow with intent "rehydrate" and your latest stateToken. Call '
    "checkpoint_workflow before risky work. To continue a session on another machine, "
    "export_session there and import_session here: the import returns fresh tokens. Errors "
    "are JSON envelopes {code, message, retry, details}; details.suggestion says what to do "
    "next."
)
