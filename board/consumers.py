import json

from channels.generic.websocket import AsyncWebsocketConsumer

from core.pings import BOARD_GROUP


class BoardConsumer(AsyncWebsocketConsumer):
    """Forwards refresh pings to the owner's open pages. Authorises, joins, forwards; no writes.
    It only speaks: a frame a page sends is ignored (the base class's `receive`), never parsed."""

    async def connect(self):
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not user.is_staff:
            await self.close(code=4401)
            return
        await self.channel_layer.group_add(BOARD_GROUP, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        await self.channel_layer.group_discard(BOARD_GROUP, self.channel_name)

    async def board_ping(self, event):
        await self.send(text_data=json.dumps({"topics": event["topics"]}))
