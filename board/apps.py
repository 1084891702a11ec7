from django.apps import AppConfig


class BoardConfig(AppConfig):
    """The owner's board: pages over sessions (sessions_app) and messages (messaging) alike.
    It may import both apps; neither imports it."""

    name = "board"
    verbose_name = "The owner's board"
