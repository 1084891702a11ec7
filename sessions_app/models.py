from django.conf import settings
from django.db import models
from django.db.models import Q

import engines


def fold_name(name):
    return name.strip().casefold()


def name_keys_of(title, aliases):
    """The folded names a row goes by by title and alias, each once, in order."""
    return list(dict.fromkeys(fold_name(n) for n in [title, *aliases] if n and n.strip()))


def fold_names(title, aliases):
    keys = name_keys_of(title, aliases)
    return "\n" + "\n".join(keys) + "\n" if keys else ""


class Task(models.Model):
    class Status(models.TextChoices):
        OPEN = "open"
        DONE = "done"

    title = models.CharField(max_length=200)
    status = models.CharField(max_length=10, choices=Status, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self):
        return self.title


class SessionQuerySet(models.QuerySet):
    def live(self):
        """Rows with a live link (HookLink.LIVE_STATES). A subquery, not a join: one row each,
        with no DISTINCT, so the rows can be a subquery themselves (sessions_app.directory.listed_sessions)."""
        return self.filter(pk__in=HookLink.objects.live().values("session_id"))

    def not_live(self):
        """Rows without a live link: never linked, or every link ended."""
        return self.exclude(links__state__in=HookLink.LIVE_STATES)


class Session(models.Model):
    """One agent conversation (docs/rules.md §1.1)."""

    class Kind(models.TextChoices):
        DESKTOP = "desktop"
        HOOK = "hook"
        MCP = "mcp"

    class Engine(models.TextChoices):
        """The coding-agent CLI the session runs in, as its hooks say (docs/rules.md §1.6)."""

        CLAUDE_CODE = "claude-code", "Claude Code"
        CODEX = "codex", "Codex"
        GEMINI = "gemini", "Gemini CLI"

    class Inbound(models.TextChoices):
        """What happens to a message from another session sent to this one (docs/rules.md §4.8)."""

        ACCEPT = "accept", "accept"
        HOLD = "hold", "hold for the owner"
        REFUSE = "refuse", "refuse"

    class Quiet(models.TextChoices):
        """What the session's page shows; nothing is deleted (docs/rules.md §4.8)."""

        ALL = "all", "all"
        HIDE_AGENTS = "hide_agents", "hide agent messages"
        AGENTS_ONLY = "agents_only", "agent messages only"

    kind = models.CharField(max_length=10, choices=Kind)
    engine = models.CharField(max_length=12, choices=Engine, default=Engine.CLAUDE_CODE)
    title = models.CharField(max_length=200, blank=True)
    inbound = models.CharField(max_length=10, choices=Inbound, default=Inbound.ACCEPT)
    quiet = models.CharField(max_length=12, choices=Quiet, default=Quiet.ALL)
    aliases = models.JSONField(default=list, blank=True)
    desktop_id = models.CharField(max_length=200, null=True, blank=True, unique=True)
    folder = models.CharField(max_length=1000, blank=True, db_index=True)
    status = models.CharField(max_length=50, blank=True, help_text="Desktop status as reported")
    task = models.ForeignKey(Task, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions")
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    # Title and aliases folded for case-insensitive lookup, one per line, framed by line
    # breaks so `contains("\nname\n")` matches whole names on SQLite and PostgreSQL alike.
    name_keys = models.TextField(blank=True, editable=False)

    objects = SessionQuerySet.as_manager()

    class Meta:
        ordering = ["-last_seen_at", "-id"]

    def save(self, *args, **kwargs):
        self.name_keys = fold_names(self.title, self.aliases)
        fields = kwargs.get("update_fields")
        renamed = fields is None or "title" in fields or "aliases" in fields
        if fields is not None and renamed:
            kwargs["update_fields"] = {*fields, "name_keys"}
        adding = self._state.adding
        super().save(*args, **kwargs)
        if renamed:
            self._write_names(adding)

    def _write_names(self, adding):
        """The row's SessionName rows: its title and aliases, folded, as this save wrote them
        (a save that may rename: a full one, or one that writes the title or aliases)."""
        if not adding:
            SessionName.objects.filter(session=self).delete()
        SessionName.objects.bulk_create([SessionName(session=self, key=key) for key in name_keys_of(self.title, self.aliases)])

    def __str__(self):
        return self.name

    @property
    def handle(self):
        return f"S-{self.pk}"

    @property
    def public_name(self):
        """The name shown to other sessions: never a hook id."""
        return self.title or self.desktop_id or self.handle

    @property
    def name(self):
        """The name it shows under: its title, else its desktop id, else its hook id."""
        if self.title:
            return self.title
        if self.desktop_id:
            return self.desktop_id
        if self.kind == self.Kind.HOOK:
            links = self.newest_links()
            if links:
                return min(links, key=lambda link: link.pk).hook_session
        return self.handle

    def newest_links(self):
        """Its hook links, newest first: those loaded with the row (sessions_app.directory's
        sessions_with_links and with_links: a list makes no query per row, and they are as
        they were when loaded), else read now, on each call."""
        try:
            return self.loaded_links
        except AttributeError:
            return list(self.links.all())  # HookLink's ordering: newest first

    def refresh_from_db(self, using=None, fields=None, from_queryset=None):
        # Reloading the row forgets its loaded links (all, or those listed for current_link),
        # as Django forgets a prefetch.
        if fields is None or "links" in fields:
            self.__dict__.pop("loaded_links", None)
            self.__dict__.pop("speaking_links", None)
        super().refresh_from_db(using=using, fields=fields, from_queryset=from_queryset)


class SessionName(models.Model):
    """One name a row goes by, folded: its title or one of its aliases (docs/rules.md §1.1).
    Written by Session.save(); find_sessions looks a name up here by index, where
    Session.name_keys (the same names in one text, for the board's substring search) could
    only be scanned row by row."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="names", db_index=False)  # session_name_once leads with it
    # Text: folding may lengthen a name of 200 characters (ß becomes ss).
    key = models.TextField(db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "key"], name="session_name_once")]

    def __str__(self):
        return self.key


class HookLinkQuerySet(models.QuerySet):
    def live(self):
        return self.filter(state__in=HookLink.LIVE_STATES)

    def live_exact(self):
        """The links that speak for their rows: exact and live (a row has one at most)."""
        return self.filter(HookLink.LIVE_EXACT)


class HookLink(models.Model):
    """Ties one Claude Code session id to one session row (docs/rules.md §1.2)."""

    class State(models.TextChoices):
        BUSY = "busy"
        IDLE = "idle"
        ENDED = "ended"

    # A link is live while its Claude Code session runs: the one definition of "live".
    LIVE_STATES = (State.BUSY, State.IDLE)
    # A live exact link speaks for its row: hooks carry its deliveries, calls naming it are verified.
    LIVE_EXACT = Q(exact=True, state__in=LIVE_STATES)

    hook_session = models.CharField(max_length=200, unique=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="links", db_index=False)  # hooklink_newest leads with it
    exact = models.BooleanField(default=False)
    state = models.CharField(max_length=10, choices=State, default=State.IDLE)
    turn = models.PositiveIntegerField(default=0, help_text="Counts UserPromptSubmit events")
    stop_blocks = models.PositiveIntegerField(default=0, help_text="Stop blocks given in this turn")
    agent_wakes = models.PositiveIntegerField(
        default=0, help_text="Wake-ups caused by messages since the owner's last prompt or comment"
    )
    waiter = models.CharField(max_length=40, blank=True, help_text="The wake-up waiter that is current")
    waiter_polled_at = models.DateTimeField(null=True, blank=True, help_text="When the current waiter's last long poll began")
    approval_asked_at = models.DateTimeField(
        null=True, blank=True, help_text="When its terminal asked about a native message whose send relaybay had not seen yet"
    )
    cwd = models.CharField(max_length=1000, blank=True)
    # Claude Code's own names for the process behind this link (docs/rules.md §4.9), as the hook client
    # reads them: its native name (--name, /rename, or <folder>-<hex>) and messaging socket.
    native_name = models.CharField(max_length=200, blank=True)
    native_name_key = models.CharField(max_length=200, blank=True, editable=False, db_index=True)
    native_socket = models.CharField(max_length=500, blank=True, db_index=True)
    transcript_path = models.CharField(max_length=1000, blank=True)
    process_proof = models.CharField(
        max_length=64,
        blank=True,
        db_index=True,
        help_text="Digest of the Claude Code process's messaging token its hooks report; never the token",
    )
    # The working tree its hooks run in, as the hook client last reported it (docs/rules.md §7.2):
    # the folder its reservations' paths are relative to.
    tree_root = models.TextField(blank=True, help_text="The root of the working tree its hooks run in, as last reported")
    repository = models.TextField(blank=True, help_text="Which repository that tree belongs to (its origin, or its shared git folder)")
    created_at = models.DateTimeField(auto_now_add=True)
    last_event_at = models.DateTimeField(null=True, blank=True)

    objects = HookLinkQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [
            # A row's links newest first, and its newest alone (listed_sessions): PostgreSQL
            # otherwise walks every newer link of every row back from the newest to find it.
            models.Index(fields=["session", "-id"], name="hooklink_newest"),
            # The live links of rows (Session.objects.live(): a live list, a folder's broadcast),
            # without walking every link a row ever had: most have ended.
            models.Index(fields=["session"], condition=Q(state__in=["busy", "idle"]), name="hooklink_live"),
        ]

    def __str__(self):
        return f"{self.hook_session} → {self.session_id}"

    @property
    def live(self):
        return self.state in self.LIVE_STATES

    @property
    def live_exact(self):
        """HookLink.LIVE_EXACT, of this link as loaded."""
        return self.exact and self.live


class Comment(models.Model):
    """The owner's comment to a session (docs/rules.md §3)."""

    session = models.ForeignKey(Session, null=True, on_delete=models.SET_NULL, related_name="comments")
    session_name = models.CharField(max_length=200, help_text="The name the session had when written to")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True, help_text="When a hook answer first carried it")
    delivered_by = models.CharField(max_length=300, blank=True, help_text="Hook event and hook id that carried it")
    # docs/rules.md §2.6: a hook answer whose client confirms what it prints leaves the item
    # offered until that confirmation, and a later hook offers it again past RELAYBAY_REOFFER_SECONDS.
    offered_at = models.DateTimeField(null=True, blank=True, help_text="Handed to a hook client that has not confirmed it yet, then")
    confirmed_at = models.DateTimeField(null=True, blank=True, help_text="When the session's hook client confirmed it printed it")

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["session", "id"], condition=Q(delivered_at=None), name="comment_pending"),
            models.Index(fields=["session", "offered_at"], condition=Q(offered_at__isnull=False), name="comment_offered"),
        ]

    def __str__(self):
        return f"Comment {self.pk} to {self.session_name}"


class Event(models.Model):
    """What happened, for the feed and the link history. Names, ids and marks; never message text."""

    name = models.CharField(max_length=60, db_index=True)
    # Every hook and every send writes feed rows, so each index is paid for on every write:
    # the row's key has none of its own (event_by_session leads with it), and nothing sorts or
    # filters by created_at alone (the feed and the admin's time column go by id, which follows it).
    session = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="events", db_index=False)
    hook_session = models.CharField(max_length=200, blank=True)
    replay = models.BooleanField(default=False)
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    happened_at = models.DateTimeField(null=True, blank=True, help_text="When a replayed event was spooled")

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["session", "-id"], name="event_by_session")]

    def __str__(self):
        return self.name


class RefusedHooks(models.Model):
    """Hook calls refused for a missing or wrong token, for the board's warning: sessions
    still connected with an old token. One row; a new streak starts after a quiet hour."""

    count = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        verbose_name_plural = "refused hooks"

    def __str__(self):
        return f"{self.count} hook calls refused since {self.first_at:%Y-%m-%d %H:%M}"


class UnheardSession(models.Model):
    """A session whose CLI named it in relaybay's MCP calls while none of its hooks ever
    arrived: Codex runs hooks only once the person trusts them (/hooks), and skips them
    silently until then. The board warns until its first hook arrives (docs/rules.md §1.6)."""

    engine = models.CharField(max_length=12, choices=Session.Engine)
    hook_session = models.CharField(max_length=200, unique=True)
    calls = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        ordering = ["-last_at"]

    def __str__(self):
        return f"{self.engine} session {self.hook_session}: {self.calls} MCP calls, no hook"

    @property
    def why(self):
        """Why its CLI may skip relaybay's hooks and what to do, as its engine says."""
        engine = engines.of(self.engine)
        return engine.unheard_note or f"relaybay's hooks are not connected there: run `manage.py connect {engine.connect_name}` again."


# --- Files sessions edit (docs/rules.md §7) ----------------------------------------------------


class FileEdit(models.Model):
    """One session's edits of one file: where the file is, when the session edited it, with which
    tool, how often. The path only, never the file's content (docs/rules.md §7.1)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="file_edits", db_index=False)  # file_edit_once leads with it
    # Digests keep the indexes small whatever a path's length: `path_key` names the file
    # (absolute, resolved), `file_key` the same relative path in every tree of its repository.
    path_key = models.CharField(max_length=32)
    file_key = models.CharField(max_length=32)
    path = models.TextField(help_text="Absolute, with .. and symlinks resolved")
    root = models.TextField(help_text="The root of the working tree holding it")
    repository = models.TextField(blank=True, help_text="Its repository (origin, or shared git folder); empty outside git")
    hook_session = models.CharField(max_length=200, blank=True)
    tool = models.CharField(max_length=200, blank=True)
    edits = models.PositiveIntegerField(default=1)
    first_at = models.DateTimeField()
    last_at = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "path_key"], name="file_edit_once")]
        indexes = [
            # Who edited this file, or its relative path in another tree: every edit asks. A file
            # has a row per session that edited it, so its times are read from the rows; an
            # index holding them would be rewritten by every edit (file_edit_once leads with the
            # session, for a session's files and the live sessions' edits).
            models.Index(fields=["file_key"], name="file_edit_by_file"),
        ]

    def __str__(self):
        return self.path

    @property
    def relative(self):
        return relative_to(self.path, self.root)


def relative_to(path, root):
    """`path` as the board shows it: relative to its working tree's root."""
    if root == "/":
        return path.lstrip("/")
    return path[len(root) + 1 :] if path.startswith(root + "/") else path


class FileReservation(models.Model):
    """A session's reservation of the files a glob names in its working tree, exclusive or shared,
    until it expires, its session releases it or ends, or the owner breaks it (docs/rules.md §7.3)."""

    class Ended(models.TextChoices):
        RELEASED = "released", "released by its session"
        SESSION_ENDED = "session ended", "its session ended"
        BROKEN = "broken", "broken by the owner"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="file_reservations")
    hook_session = models.CharField(max_length=200, blank=True)
    root = models.TextField(help_text="The root of the working tree the pattern is relative to")
    pattern = models.CharField(max_length=500, help_text="A glob relative to the root: * and ? within a folder, ** across folders")
    exclusive = models.BooleanField(default=True)
    reason = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    ended = models.CharField(max_length=20, choices=Ended, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [
            # The reservations in force: few, read by every edit.
            models.Index(fields=["expires_at"], condition=Q(ended_at=None), name="file_reservation_held"),
        ]

    def __str__(self):
        return f"{self.pattern} in {self.root}"


class FileNotice(models.Model):
    """What a session hears at its next hook about files (docs/rules.md §7.1, §7.3): another session
    is now editing a file it changed, or the owner broke its reservation. A kind of delivery
    (collisions/edits.py), with a comment's delivery columns."""

    class Kind(models.TextChoices):
        EDITING = "editing"
        BROKEN = "broken"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="file_notices")
    kind = models.CharField(max_length=10, choices=Kind)
    other = models.ForeignKey(Session, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    other_name = models.CharField(max_length=200, blank=True, help_text="The other session's name, as it went by then")
    path = models.TextField(help_text="The file, or the reservation's pattern, relative to the root")
    root = models.TextField()
    changed_at = models.DateTimeField(null=True, blank=True, help_text="When the session itself last changed the file")
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True, help_text="When a hook answer first carried it")
    delivered_by = models.CharField(max_length=300, blank=True)
    offered_at = models.DateTimeField(null=True, blank=True)
    confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["session", "id"], condition=Q(delivered_at=None), name="file_notice_pending"),
            models.Index(fields=["session", "offered_at"], condition=Q(offered_at__isnull=False), name="file_notice_offered"),
        ]

    def __str__(self):
        return f"File notice {self.pk} to {self.session_id}"
