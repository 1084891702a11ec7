"""Which tools of each agent CLI edit files, and what of their calls names the files
(docs/rules.md §7.1, §7.2). Paths only: no file's content is read or stored."""

from . import Engine

CLAUDE_CODE = Engine.CLAUDE_CODE
CODEX = Engine.CODEX
GEMINI = Engine.GEMINI
# Each agent CLI's tools that write files, and the fields of their input that name the file. The
# edit check (collisions/edits.py) and what is stored of their calls read this table
# alone, so another engine's edit tools are one more entry.
EDIT_TOOLS = {
    CLAUDE_CODE: {
        "Edit": ("file_path",),
        "Write": ("file_path",),
        "MultiEdit": ("file_path",),
        "NotebookEdit": ("notebook_path",),
    },
    # Codex CLI 0.171.0 (seen): apply_patch's PreToolUse holds the patch in `command`, which
    # names its files (PATCH_TOOLS).
    CODEX: {
        "apply_patch": ("command",),
    },
    # Gemini CLI 0.61.0 (seen): its BeforeTool and AfterTool name the file in `file_path`.
    GEMINI: {
        "write_file": ("file_path",),
        "replace": ("file_path",),
    },
}
# Edit tools whose field is a patch in Codex's format, its files named by these headers.
PATCH_TOOLS = {(CODEX, "apply_patch")}
PATCH_HEADERS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ")
PATCHED_MAX = 200  # files of one patch the edit check looks at
NOT_STORED = "[not stored: file content]"
# What an edit tool's result holds besides the file's content (old and new text, the patch,
# the whole original file): kept in its stored event.
RESPONSE_KEPT = ("filePath", "file_path", "notebook_path", "type", "success")


def edit_fields(tool_name, engine=CLAUDE_CODE):
    """The input fields naming the file of an edit tool, or None for a tool that edits nothing."""
    return EDIT_TOOLS.get(engine, {}).get(tool_name) if isinstance(tool_name, str) else None


def edited_paths(tool_name, tool_input, engine=CLAUDE_CODE):
    """The paths a tool call says it will write, as given."""
    fields = edit_fields(tool_name, engine)
    if not fields or not isinstance(tool_input, dict):
        return []
    given = [tool_input[name] for name in fields if isinstance(tool_input.get(name), str)]
    if (engine, tool_name) in PATCH_TOOLS:
        return [path for patch in given for path in patched_files(patch)]
    return given


def patched_files(patch):
    """The files a patch in Codex's apply_patch format adds, updates, deletes or moves to, each
    once, in order, at most PATCHED_MAX."""
    found = []
    for line in patch.splitlines():
        header = next((h for h in PATCH_HEADERS if line.startswith(h)), None)
        path = line[len(header):].strip() if header else ""
        if path and path not in found:
            found.append(path)
            if len(found) == PATCHED_MAX:
                break
    return found


def without_file_content(payload, engine=CLAUDE_CODE):
    """A hook payload as it may be stored (docs/rules.md §7.2): of an edit tool's call only the
    paths it names and its result's kind; its text, the file's old and new content and any
    error quoting them are replaced by NOT_STORED."""
    fields = edit_fields(payload.get("tool_name"), engine)
    if not fields:
        return payload
    data = dict(payload)
    if (engine, data["tool_name"]) in PATCH_TOOLS and isinstance(data.get("tool_input"), dict):
        # A patch is the files' content: of it only the files it names are kept.
        fields = ("files",)
        data["tool_input"] = {**data["tool_input"], "files": edited_paths(data["tool_name"], data["tool_input"], engine)}
    for key, kept in (("tool_input", fields), ("tool_response", RESPONSE_KEPT)):
        value = data.get(key)
        if isinstance(value, dict):
            data[key] = {k: (v if k in kept else NOT_STORED) for k, v in value.items()}
        elif key in data:
            data[key] = NOT_STORED
    if "error" in data:
        data["error"] = NOT_STORED
    return data
