"""What colour is drawn on what, and what each colour means: the rules every theme must keep.

Pure data and arithmetic (no Textual), checked for every shipped theme by the tests and usable on
a user's theme. Contrast is WCAG 2's ratio of relative luminances: 4.5:1 for words and numbers
(AA body text), 3:1 for graphics such as bars and sparklines (AA non-text contrast).

Meaning: "danger" (`gauge-high`, `device-lost`, `error`) is kept for what needs a person: memory
nearly full, a thermal or power-brake slowdown, a lost device, a critical hint. A busy GPU is a
healthy GPU: utilization and power bars never turn red (see `gauge_class` in gpu.py).
"""

from __future__ import annotations

TEXT = 4.5
GRAPHIC = 3.0
VISIBLE = 1.15  # decorations (the empty part of a bar) only need to differ from the background

# Backgrounds, each with the theme colours drawn on it as text or graphics.
CARD_TEXT = ("foreground", "primary", "muted", "badge-info", "badge-slowdown", "stale",
             "device-lost", "warning", "error", "accent")
CARD_GRAPHICS = ("gauge-low", "gauge-mid", "gauge-high", "plot-util", "plot-memory",
                 "plot-power")
RULES: tuple[tuple[str, tuple[str, ...], float], ...] = (
    # GPU cards and the hint bar
    ("background", CARD_TEXT, TEXT),
    ("background", CARD_GRAPHICS, GRAPHIC),
    ("background", ("gauge-empty",), VISIBLE),
    # the selected GPU's card
    ("selected", CARD_TEXT, TEXT),
    ("selected", CARD_GRAPHICS, GRAPHIC),
    ("selected", ("gauge-empty",), VISIBLE),
    # the process table and the history plot
    ("surface", ("foreground", "primary", "muted", "accent"), TEXT),
    ("surface", ("plot-util", "plot-memory", "plot-power"), GRAPHIC),
    # the header, the table's header and the footer
    ("panel", ("foreground", "primary", "muted", "accent", "recording", "error", "stale"), TEXT),
)


def _linear(channel: float) -> float:
    return channel / 12.92 if channel <= 0.03928 else ((channel + 0.055) / 1.055) ** 2.4


def luminance(rgb: tuple[int, int, int]) -> float:
    r, g, b = (_linear(c / 255) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def hex_rgb(value: str) -> tuple[int, int, int] | None:
    """``#rrggbb`` as a triplet; None for anything else (ANSI names follow the user's palette)."""
    v = value.strip()
    if len(v) == 7 and v.startswith("#"):
        try:
            return int(v[1:3], 16), int(v[3:5], 16), int(v[5:7], 16)
        except ValueError:
            return None
    return None


def violations(colors: dict[str, str]) -> list[str]:
    """Every rule a theme's colours (``[colors]`` and ``[variables]`` merged) break, one line
    each. ANSI colour names cannot be measured (the terminal's palette decides); for them the
    rule is only that text never takes its own background's colour."""
    found = []
    for background, texts, minimum in RULES:
        bg = colors.get(background)
        if bg is None:
            found.append(f"{background}: not defined")
            continue
        for name in texts:
            fg = colors.get(name)
            if fg is None:
                found.append(f"{name}: not defined")
                continue
            fg_rgb, bg_rgb = hex_rgb(fg), hex_rgb(bg)
            if fg_rgb is None or bg_rgb is None:
                if fg == bg and fg != "ansi_default":
                    found.append(f"{name} on {background}: both {fg}")
                continue
            ratio = contrast(fg_rgb, bg_rgb)
            if ratio < minimum:
                found.append(f"{name} {fg} on {background} {bg}: {ratio:.2f}:1 < {minimum}:1")
    return found
