from django.apps import AppConfig


class MessagingConfig(AppConfig):
    name = "messaging"
    verbose_name = "Messages between sessions"

    def ready(self):
        # Hook ingestion lives in sessions_app, which never imports messaging: it reaches
        # messages through what messaging registers here, the recorder of native traffic and
        # messages as a kind of delivery.
        from sessions_app.hooks import claude_native, delivery

        from .deliverable import MESSAGES
        from .native_rows import do_record_native_traffic

        if do_record_native_traffic not in claude_native.recorders:
            claude_native.recorders.append(do_record_native_traffic)
        delivery.register(MESSAGES)
