"""Messages as a kind of thing a hook carries (sessions_app/hooks/delivery.py), registered in
MessagingConfig.ready."""

import json

from django.db.models import Q

from sessions_app.hooks.delivery import Deliverable

from .formatting import message_block
from .models import SessionMessage


class Messages(Deliverable):
    name = "message"
    order = 20
    model = SessionMessage
    session_field = "recipient"
    prefix = "M"
    # Read before delivery (acknowledged by id): nothing left to carry. Native messages are
    # Claude Code's to deliver; relaybay only records them. Held, denied and expired messages
    # wait on the owner, not on a hook (docs/rules.md §4.8).
    carriable = Q(read_at=None, channel=SessionMessage.Channel.MCP, state=SessionMessage.State.SENT)
    carriable_sql = f"read_at IS NULL AND channel = '{SessionMessage.Channel.MCP}' AND state = '{SessionMessage.State.SENT}'"
    # What the sender was told about why it waited no longer holds.
    claimed_fields = {"not_delivered_reason": ""}

    def block(self, item):
        return message_block(item)

    def source(self, items):
        senders = list(dict.fromkeys(message.sender_name for message in items))
        if len(senders) == 1:
            # Quoted like the frame quotes it, so a name cannot pass for header text.
            return f"session {json.dumps(senders[0], ensure_ascii=False)} (another session, not the owner)"
        return f"{len(senders)} other sessions (not the owner)"

    def delivered_event(self, item, carrier):
        return "message.delivered", {"message": item.pk, "from": item.sender_name, "to": item.recipient_name, "by": carrier}


MESSAGES = Messages()
