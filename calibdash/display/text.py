"""Re-exports :mod:`calibdash.text` for compatibility: text from users' files shown as text.

The module moved to the ground floor of the package (beside :mod:`calibdash.errors`, whose
messages it marks) so that the exceptions no longer import :mod:`calibdash.display`. Code
that imports ``calibdash.display.text`` keeps working; new code imports :mod:`calibdash.text`.
"""

from __future__ import annotations

from calibdash.text import (
    CELL_CHARACTERS,
    CLOSE,
    JOINER,
    OPEN,
    SHOWN_CHARACTERS,
    CellText,
    UserText,
    cell,
    code,
    escape_markdown,
    markdown,
    plot_text,
    quoted,
    show_controls,
    split_marked,
    strip_marks,
    user,
)

__all__ = ["OPEN", "CLOSE", "JOINER", "SHOWN_CHARACTERS", "CELL_CHARACTERS", "UserText", "CellText", "cell", "user", "quoted",
           "show_controls", "strip_marks", "split_marked", "code", "escape_markdown", "markdown", "plot_text"]
