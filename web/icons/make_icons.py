"""Draw the control page's icons (PNG) with nothing but the standard library.

    python3 web/icons/make_icons.py

A bridge arch over a deck, in the page's accent colour on its dark background; the maskable icon
keeps the drawing inside the central safe zone.
"""

from __future__ import annotations

import math
import struct
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
BACKGROUND = (28, 27, 25)
ACCENT = (217, 119, 87)
SAMPLES = 4  # supersampling per axis, for smooth edges


def _inside(x: float, y: float, scale: float, rounded: bool) -> tuple[bool, bool]:
    """(inside the tile, inside the glyph) for a point in 0..1 coordinates."""
    tile = True
    if rounded:
        r = 0.22
        cx = min(max(x, r), 1 - r)
        cy = min(max(y, r), 1 - r)
        tile = (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    # glyph in a centred box of size `scale`
    u = (x - 0.5) / scale + 0.5
    v = (y - 0.5) / scale + 0.5
    dx, dy = u - 0.5, v - 0.62
    dist = math.hypot(dx, dy)
    arch = 0.27 <= dist <= 0.38 and dy <= 0
    deck = 0.60 <= v <= 0.68 and 0.08 <= u <= 0.92
    pillars = (0.12 <= u <= 0.23 or 0.77 <= u <= 0.88) and 0.62 <= v <= 0.86
    return tile, arch or deck or pillars


def draw(size: int, scale: float, rounded: bool) -> bytes:
    rows = []
    n = SAMPLES * SAMPLES
    for py in range(size):
        row = bytearray([0])
        for px in range(size):
            tile_hits = glyph_hits = 0
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    x = (px + (sx + 0.5) / SAMPLES) / size
                    y = (py + (sy + 0.5) / SAMPLES) / size
                    tile, glyph = _inside(x, y, scale, rounded)
                    tile_hits += tile
                    glyph_hits += tile and glyph
            alpha = tile_hits / n
            g = glyph_hits / max(tile_hits, 1)
            rgb = [round(b + (a - b) * g) for a, b in zip(ACCENT, BACKGROUND, strict=True)]
            row += bytes([*rgb, round(alpha * 255)])
        rows.append(bytes(row))
    raw = zlib.compress(b"".join(rows), 9)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack("!I", len(data)) + kind + data + struct.pack("!I", zlib.crc32(kind + data))
        )

    header = struct.pack("!IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", raw) + chunk(b"IEND", b"")


def main() -> None:
    (HERE / "icon-192.png").write_bytes(draw(192, 0.78, rounded=True))
    (HERE / "icon-512.png").write_bytes(draw(512, 0.78, rounded=True))
    (HERE / "icon-maskable-512.png").write_bytes(draw(512, 0.6, rounded=False))
    (HERE / "apple-touch-icon.png").write_bytes(draw(180, 0.7, rounded=False))


if __name__ == "__main__":
    main()
