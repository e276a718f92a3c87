"""The administration and health bodies: ``POST /v1/admin/erase`` (spec 06.7), ``/healthz``."""

from __future__ import annotations

from collections.abc import Mapping

from oharness.errors import ValidationError
from oharness.sync.protocol.fields import Count, Plan, Quotas, Wire, convert, sent
from oharness.sync.protocol.manifest import is_reserved_subject


class EraseRequest(Wire, frozen=True):
    """Whom to erase: ``{"userId": "…"}`` or ``{"teamId": "…"}``, exactly one of them."""

    user_id: str | None = None
    team_id: str | None = None

    @property
    def target(self) -> tuple[str, str]:
        """``("userId", id)`` or ``("teamId", id)`` (a parsed request names exactly one)."""
        if self.user_id is not None:
            return "userId", self.user_id
        return "teamId", self.team_id or ""


def parse_erase_request(value: object) -> EraseRequest:
    """Parse an erase body: exactly one non-empty id, not of the reserved hashed shape."""
    shape = 'send {"userId": "…"} or {"teamId": "…"}'
    if not isinstance(value, dict):
        raise ValidationError(shape, field="request body")
    try:
        request = convert(value, EraseRequest, "request body")
    except ValidationError as exc:
        raise ValidationError(shape, field="request body") from exc
    given = [key for key in ("userId", "teamId") if key in value]
    chosen = {"userId": request.user_id, "teamId": request.team_id}
    if len(given) != 1 or not chosen[given[0]]:
        raise ValidationError(shape, field="request body")
    if is_reserved_subject(request.target[1]):
        raise ValidationError(
            f"{request.target[1]!r} has the reserved shape u-<32 hex>", field="request body"
        )
    return request


class EraseResponse(Wire, frozen=True):
    """What an erase did: its target and how many objects this call deleted."""

    erased: Mapping[str, str]
    deleted: Count
    quotas: Quotas
    plan: Plan = sent("free")


class HealthResponse(Wire, frozen=True):
    """``/healthz``: storage answers."""

    quotas: Quotas
    status: str = sent("ok")
    plan: Plan = sent("free")
