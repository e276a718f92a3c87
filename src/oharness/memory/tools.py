"""The three tools as JSON-schema definitions, and the dispatcher for a model's tool call.

``tool_definitions()`` is the neutral form (name, description, input schema);
``openai_tools()`` and ``anthropic_tools()`` wrap it for those function-calling APIs.
``call_tool()`` validates a call's arguments and returns a JSON-ready result, or an error
object ``{"error": {"code", "message"}}`` that a model can read and act on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oharness.errors import OHarnessError, ValidationError
from oharness.memory.memory_service import UNSET, MemoryService
from oharness.notes.quoting import STORED_DATA, quote_in
from oharness.notes.secrets import redact_for_model_in
from oharness.types import NOTE_TYPES, parse_scope

_SCOPE: Final = {"type": "string", "enum": ["project", "user"]}
#: The longest query the memory tool searches (a pasted log is not a query; its echo in the
#: result would cost the model as much again).
MAX_QUERY_CHARS: Final = 20_000
# A note id, or ``user:ID`` / ``project:ID`` as the index and listings print it.
_ID: Final = {
    "type": "string",
    "pattern": "^(?:(?:user|project):)?[A-Za-z0-9][A-Za-z0-9_-]{0,127}$",
}

REMEMBER: Final[dict[str, Any]] = {
    "name": "remember",
    "description": (
        "Save a durable note for future sessions, or update one (give its id). Write: a "
        "correction or confirmed approach, a decision and its reason, a constraint, who the user "
        "is, where external information lives. Don't write: what the code or git history "
        "already says, ephemeral task state, secrets. Link notes with [[note-id]] in the body. "
        "Add tags for synonyms and for the term in the other language in use."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "summary": {
                "type": "string",
                "description": "One line, at most 200 characters.",
                "maxLength": 200,
            },
            "body": {"type": "string", "description": "Markdown: the fact, why, how to apply."},
            "type": {"type": ["string", "null"], "enum": [*NOTE_TYPES, None]},
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "string"}],
                "description": "Keywords; a list or a comma/space separated string.",
            },
            "scope": {
                **_SCOPE,
                "description": "Default: 'user' for type user, otherwise 'project'.",
            },
            "id": {
                **_ID,
                "description": (
                    "Update this existing note (the fields left out are kept); omit to create a "
                    "new one, which needs summary and body."
                ),
            },
        },
        "additionalProperties": False,
    },
}

MEMORY: Final[dict[str, Any]] = {
    "name": "memory",
    "description": (
        "Read notes. With an id: the full note with its links. With a query: the best matching "
        "notes of both scopes with a snippet each. Without arguments: every note of the project "
        "and user scopes, newest first, one line each, paged with offset/limit (the index in "
        "the system prompt is truncated; this lists them all)."
    ),
    "input_schema": {
        "type": "object",
        "properties": {
            "id": _ID,
            "query": {"type": "string", "description": "Words to search for in both scopes."},
            "scope": _SCOPE,
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1, "maximum": 200},
        },
        "additionalProperties": False,
    },
}

FORGET: Final[dict[str, Any]] = {
    "name": "forget",
    "description": (
        "Delete a note by id (a backup is kept and can be restored). Give scope when the id "
        "exists in both scopes."
    ),
    "input_schema": {
        "type": "object",
        "properties": {"id": _ID, "scope": _SCOPE},
        "required": ["id"],
        "additionalProperties": False,
    },
}


def tool_definitions() -> list[dict[str, Any]]:
    """The three tools: name, description and JSON-schema input."""
    return [REMEMBER, MEMORY, FORGET]


def openai_tools() -> list[dict[str, Any]]:
    """Definitions in the OpenAI chat-completions ``tools`` format."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool["description"],
                "parameters": tool["input_schema"],
            },
        }
        for tool in tool_definitions()
    ]


def anthropic_tools() -> list[dict[str, Any]]:
    """Definitions in the Anthropic messages ``tools`` format."""
    return [
        {
            "name": tool["name"],
            "description": tool["description"],
            "input_schema": tool["input_schema"],
        }
        for tool in tool_definitions()
    ]


def _check_arguments(name: str, arguments: Mapping[str, Any], schema: dict[str, Any]) -> None:
    allowed = schema["input_schema"]["properties"]
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise ValidationError(
            f"{name}: unknown argument(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}"
        )
    for required in schema["input_schema"].get("required", []):
        if required not in arguments:
            raise ValidationError(f"{name}: missing required argument {required!r}")
    for key in ("offset", "limit"):
        value = arguments.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ValidationError(f"{name}: {key} must be an integer", field=key)
    for key in ("id", "scope", "summary", "body", "query"):
        value = arguments.get(key)
        if value is not None and not isinstance(value, str):
            raise ValidationError(f"{name}: {key} must be a string", field=key)


def call_tool(service: MemoryService, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run one tool call; refusals come back as ``{"error": {...}}``, never as exceptions."""
    try:
        result = _dispatch(service, name, arguments)
    except OHarnessError as exc:
        result = {"error": {"code": exc.code, "message": exc.message}}
    if name == "memory" and "error" not in result:
        result["notice"] = STORED_DATA  # what follows is note text, not instructions
    # What a tool returns goes to the model: credentials in notes are hidden, and no note text
    # can close or forge a block around it (notes.quoting).
    hidden: dict[str, Any] = redact_for_model_in(quote_in(result))  # type: ignore[assignment]
    return hidden


def _dispatch(service: MemoryService, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(arguments, Mapping):
        raise ValidationError(f"{name}: arguments must be a JSON object")
    scope_value = arguments.get("scope")
    scope = parse_scope(scope_value) if scope_value is not None else None
    if name == "remember":
        _check_arguments(name, arguments, REMEMBER)
        summary, body = arguments.get("summary"), arguments.get("body")
        if arguments.get("id") is None and (summary is None or body is None):
            raise ValidationError(
                f"{name}: missing required argument {'summary' if summary is None else 'body'!r}"
                " (a new note needs a summary and a body; give id to update a note)"
            )
        return service.remember(
            summary,
            body,
            type=arguments.get("type", UNSET),
            tags=arguments.get("tags", UNSET),
            scope=scope,
            id=arguments.get("id"),
        ).to_dict()
    if name == "memory":
        _check_arguments(name, arguments, MEMORY)
        if arguments.get("id") is not None:
            return service.read(arguments["id"], scope).to_dict()
        if arguments.get("query") is not None:
            query = arguments["query"]
            if len(query) > MAX_QUERY_CHARS:
                raise ValidationError(
                    f"query is {len(query):,} characters: at most {MAX_QUERY_CHARS:,}; search "
                    "with the words that matter",
                    field="query",
                )
            hits = service.search(query, arguments.get("limit", 10))
            return {"query": query, "results": [hit.to_dict() for hit in hits]}
        return service.listing(arguments.get("offset", 0), arguments.get("limit", 50)).to_dict()
    if name == "forget":
        _check_arguments(name, arguments, FORGET)
        return service.forget(arguments["id"], scope).to_dict()
    raise ValidationError(f"unknown tool {name!r}: the memory tools are remember, memory, forget")
