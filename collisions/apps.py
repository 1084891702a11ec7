from django.apps import AppConfig


class CollisionsConfig(AppConfig):
    name = "collisions"
    verbose_name = "Files sessions edit: collisions and reservations"

    def ready(self):
        # Hook ingestion lives in sessions_app, which never imports collisions: the edit check
        # takes part in each hook's pass, and file notices in its deliveries, from here.
        from sessions_app.hooks import delivery, steps

        from .edits import FILE_NOTICES, EditStep

        delivery.register(FILE_NOTICES)
        steps.register(EditStep())
