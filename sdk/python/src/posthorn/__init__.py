"""Posthorn: verify webhooks, call the public API with backoff, page through lists, and
run projects for customers through the operator API.

    from posthorn.webhooks import verify, WebhookVerificationError
    from posthorn import Client, Operator
"""

__version__ = "0.1.0"

from .client import Client, ClientCertificateIn, CursorIterator, EventIn  # noqa: E402
from .errors import ApiConnectionError, ApiError, PosthornError, RateLimitError  # noqa: E402
from .models import (  # noqa: E402
    ClientCertificate,
    Destination,
    Delivery,
    DeliveryDetail,
    Erasure,
    Event,
    EventAccepted,
    EventTypeSchema,
    FilteredOut,
    Page,
    Replay,
    Webhook,
)
from .operator import (  # noqa: E402
    AttemptCounts,
    Brand,
    BrandIn,
    CreatedKey,
    EffectiveLimits,
    LimitOverrides,
    Operator,
    PortalLink,
    Project,
    Usage,
    UsageDay,
)
from .transport import Attempt  # noqa: E402
from .webhooks import (  # noqa: E402
    InvalidSignatureError,
    InvalidTimestampError,
    MissingHeadersError,
    WebhookVerificationError,
    verify,
)

__all__ = [
    "Client",
    "CursorIterator",
    "Attempt",
    "PosthornError",
    "ApiError",
    "RateLimitError",
    "ApiConnectionError",
    "Webhook",
    "ClientCertificate",
    "Destination",
    "ClientCertificateIn",
    "EventAccepted",
    "Event",
    "FilteredOut",
    "Delivery",
    "DeliveryDetail",
    "Replay",
    "Erasure",
    "EventTypeSchema",
    "EventIn",
    "Page",
    "Operator",
    "Project",
    "EffectiveLimits",
    "Brand",
    "CreatedKey",
    "Usage",
    "UsageDay",
    "AttemptCounts",
    "PortalLink",
    "LimitOverrides",
    "BrandIn",
    "verify",
    "WebhookVerificationError",
    "InvalidSignatureError",
    "InvalidTimestampError",
    "MissingHeadersError",
]
