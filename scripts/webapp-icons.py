#!/usr/bin/env python3
"""Draws the web app's icons (Sources/HeraldServer/Resources/App/*.png) with nothing but the standard library: a white
bell on Herald's ink colour, antialiased by supersampling. The PNGs are committed; run this again only to change them.

    python3 scripts/webapp-icons.py

- icon192.png, icon512.png: rounded square, the bell filling most of it (purpose "any");
- maskable512.png: full bleed, the bell inside the central 80 % safe zone (purpose "maskable");
- badge96.png: the bell alone, white on transparent (Android's status-bar badge uses only the alpha channel).
"""

import math
import os
import struct
import zlib

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Sources/HeraldServer/Resources/App")
INK = (0x1D, 0x23, 0x30)
ACCENT = (0x2F, 0x5B, 0xD3)
WHITE = (0xFF, 0xFF, 0xFF)
SAMPLES = 3  # per axis


def png(path, size, pixel):
    """Writes an RGBA PNG whose pixel (x, y) in [0, 1)² coordinates is `pixel(x, y) -> (r, g, b, a)` floats."""
    rows = bytearray()
    for y in range(size):
        rows.append(0)
        for x in range(size):
            acc = [0.0, 0.0, 0.0, 0.0]
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    r, g, b, a = pixel((x + (sx + 0.5) / SAMPLES) / size, (y + (sy + 0.5) / SAMPLES) / size)
                    acc[0] += r * a
                    acc[1] += g * a
                    acc[2] += b * a
                    acc[3] += a
            n = SAMPLES * SAMPLES
            alpha = acc[3] / n
            colour = [round(c / acc[3]) if acc[3] else 0 for c in acc[:3]]
            rows += bytes(colour + [round(alpha * 255)])

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    with open(path, "wb") as file:
        file.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 9))
                   + chunk(b"IEND", b""))
    print(f"{os.path.relpath(path)}: {os.path.getsize(path)} bytes")


def bell(x, y):
    """Whether (x, y), with the bell's box being [0, 1)², is inside the bell: dome, flared body, rim, clapper, knob."""
    cx = 0.5
    if (x - cx) ** 2 + (y - 0.08) ** 2 <= 0.07 ** 2:  # the knob on top
        return True
    if 0.80 <= y <= 0.88 and abs(x - cx) <= 0.47:  # the rim
        return True
    if (x - cx) ** 2 + (y - 0.93) ** 2 <= 0.12 ** 2 and y > 0.88:  # the clapper
        return True
    if 0.12 <= y <= 0.80:
        t = (y - 0.12) / 0.68
        # A dome that widens slowly, then flares towards the rim.
        half = 0.22 + 0.12 * math.sqrt(t) + 0.10 * t ** 3
        if y < 0.30:
            return (x - cx) ** 2 + ((y - 0.34) * 1.0) ** 2 <= 0.24 ** 2 or abs(x - cx) <= half and y > 0.2
        return abs(x - cx) <= half
    return False


def rounded(x, y, radius):
    """Inside the unit square with corners rounded by `radius`."""
    dx = max(radius - x, 0, x - (1 - radius))
    dy = max(radius - y, 0, y - (1 - radius))
    return dx * dx + dy * dy <= radius * radius


def background(x, y):
    """Ink, with a little accent light from the top left."""
    t = max(0.0, 1.0 - math.hypot(x, y) / 1.2) * 0.55
    return tuple(INK[i] + (ACCENT[i] - INK[i]) * t for i in range(3))


def icon(inset, corner):
    """The bell in a box of side (1 - 2·inset), over a rounded (or, with corner 0, full) square of background."""
    def pixel(x, y):
        if corner and not rounded(x, y, corner):
            return (0, 0, 0, 0.0)
        side = 1 - 2 * inset
        if bell((x - inset) / side, (y - inset) / side):
            return WHITE + (1.0,)
        return background(x, y) + (1.0,)
    return pixel


def badge(x, y):
    return WHITE + (1.0,) if bell((x - 0.1) / 0.8, (y - 0.08) / 0.8) else (0, 0, 0, 0.0)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    png(os.path.join(OUT, "icon192.png"), 192, icon(0.2, 0.2))
    png(os.path.join(OUT, "icon512.png"), 512, icon(0.2, 0.2))
    png(os.path.join(OUT, "maskable512.png"), 512, icon(0.28, 0))
    png(os.path.join(OUT, "badge96.png"), 96, badge)
