#!/usr/bin/env python3
"""Image fixtures and PIL goldens for src/media (media_test).

PIL (Debian's python3-pil, over the same libjpeg-turbo, libpng, libwebp and
giflib) is the reference: it writes the fixtures, decodes them and resizes
them. The expected pixels follow the documented conversion of image.h:
  - every mode with alpha (RGBA, LA, P or a GIF with a transparent index,
    WebP with alpha) becomes RGBA and is pasted on white with the alpha as the
    mask, exactly as the reference processor's to_rgb does for RGBA;
  - other modes: convert("RGB");
  - the EXIF orientation applied with ImageOps.exif_transpose;
  - 16-bit PNG samples: their high byte (written here from the known 16-bit
    values, since PIL clips 16-bit gray instead).
Resize goldens: Image.resize with BICUBIC and BILINEAR on the decoded photo.

Bad inputs (truncated, corrupt, a 100000x100000 PNG header, text, empty, BMP,
WAV) are written too; media_test checks each gets its precise error.

Usage: /usr/bin/python3 tools/media/make_fixtures.py tests/data/media
Goldens are committed; the tests need no Python.
"""
import io
import json
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image, ImageOps

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
manifest = {"decode": [], "resize": [], "bad": []}


def photo(w, h, seed):
    """A smooth colour field with texture: JPEG-realistic, asymmetric (so a
    wrong orientation or a swapped axis shows)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 100 * np.sin(x / 7.0) * np.cos(y / 11.0)
    g = 255 * x / max(w - 1, 1)
    b = 255 * (y / max(h - 1, 1)) ** 2
    a = np.stack([r, g, b], -1) + rng.normal(0, 12, (h, w, 3))
    return np.clip(a, 0, 255).astype(np.uint8)


def expected_rgb(im):
    im = ImageOps.exif_transpose(im)
    alpha = im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info
    if alpha:
        rgba = im.convert("RGBA")
        white = Image.new("RGB", rgba.size, (255, 255, 255))
        white.paste(rgba, mask=rgba.split()[3])
        return white
    return im.convert("RGB")


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def add_decode(name, data, expected=None):
    write(name, data)
    if expected is None:
        expected = expected_rgb(Image.open(io.BytesIO(data)))
    write(name + ".rgb", expected.tobytes())
    manifest["decode"].append({"file": name, "width": expected.size[0], "height": expected.size[1]})


def saved(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def exif_with_orientation(o):
    e = Image.Exif()
    e[0x0112] = o
    return e.tobytes()


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png16(arr, color_type):
    """A 16-bit PNG (gray: color type 0, RGB: 2) from a uint16 array."""
    h, w = arr.shape[:2]
    raw = b"".join(b"\0" + arr[y].astype(">u2").tobytes() for y in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(raw)) + png_chunk(b"IEND", b"")


base = photo(67, 45, 1)
rgb = Image.fromarray(base, "RGB")

# JPEG: baseline 4:2:0, progressive, gray, CMYK (Adobe, inverted), EXIF 1..8.
add_decode("photo.jpg", saved(rgb, "JPEG", quality=90))
add_decode("progressive.jpg", saved(rgb, "JPEG", quality=85, progressive=True))
add_decode("gray.jpg", saved(rgb.convert("L"), "JPEG", quality=90))
add_decode("cmyk.jpg", saved(rgb.convert("CMYK"), "JPEG", quality=90))
add_decode("q444.jpg", saved(rgb, "JPEG", quality=95, subsampling=0))
for o in range(1, 9):
    add_decode(f"orient{o}.jpg", saved(rgb, "JPEG", quality=90, exif=exif_with_orientation(o)))

# PNG: RGB, RGBA with graded alpha, LA, palette with a transparent entry,
# 1-bit, 16-bit gray and RGB, EXIF orientation in eXIf.
alpha = np.tile(np.linspace(0, 255, 67).astype(np.uint8), (45, 1))
rgba = Image.fromarray(np.dstack([base, alpha]), "RGBA")
add_decode("rgb.png", saved(rgb, "PNG"))
add_decode("rgba.png", saved(rgba, "PNG"))
add_decode("la.png", saved(Image.fromarray(np.dstack([base[..., 1], alpha]), "LA"), "PNG"))
pal = rgb.quantize(16)
pal.info["transparency"] = 3
add_decode("palette.png", saved(pal, "PNG", transparency=3))
add_decode("bilevel.png", saved(rgb.convert("1"), "PNG"))
g16 = (base[..., 0].astype(np.uint16) * 257 + np.arange(67, dtype=np.uint16)[None, :]).astype(np.uint16)
add_decode("gray16.png", png16(g16, 0), Image.fromarray((g16 >> 8).astype(np.uint8), "L").convert("RGB"))
c16 = (base.astype(np.uint16) * 257 + 91).astype(np.uint16)
add_decode("rgb16.png", png16(c16, 2), Image.fromarray((c16 >> 8).astype(np.uint8), "RGB"))
add_decode("orient6.png", saved(rgb, "PNG", exif=exif_with_orientation(6)))

# WebP: lossy, lossless with alpha, EXIF orientation, a two-frame animation.
add_decode("lossy.webp", saved(rgb, "WEBP", quality=80))
add_decode("alpha.webp", saved(rgba, "WEBP", lossless=True))
add_decode("orient8.webp", saved(rgb, "WEBP", quality=80, exif=exif_with_orientation(8)))
frame2 = Image.fromarray(255 - base, "RGB")
add_decode("animated.webp", saved(rgb, "WEBP", save_all=True, append_images=[frame2], duration=100, lossless=True))

# GIF: a palette image with a transparent index; a two-frame animation.
gif = rgb.quantize(32)
add_decode("transparent.gif", saved(gif, "GIF", transparency=5))
add_decode("animated.gif", saved(gif, "GIF", save_all=True, append_images=[frame2.quantize(32)], duration=100))

# Resize goldens on the decoded photo (PIL's pixels, which media_test checks
# equal ours first).
src = Image.open(os.path.join(out, "photo.jpg")).convert("RGB")
for (w, h) in [(28, 28), (56, 28), (140, 84), (67, 90), (30, 45), (1, 1), (224, 150)]:
    for name, f in [("bicubic", Image.BICUBIC), ("bilinear", Image.BILINEAR)]:
        r = src.resize((w, h), f)
        fname = f"photo.jpg.{name}.{w}x{h}.rgb"
        write(fname, r.tobytes())
        manifest["resize"].append({"source": "photo.jpg", "filter": name, "width": w, "height": h, "file": fname})


def bad(name, data, code, contains):
    write(name, data)
    manifest["bad"].append({"file": name, "code": code, "contains": contains})


jpeg = open(os.path.join(out, "photo.jpg"), "rb").read()
png = open(os.path.join(out, "rgb.png"), "rb").read()
webp = open(os.path.join(out, "lossy.webp"), "rb").read()
gifb = open(os.path.join(out, "transparent.gif"), "rb").read()
bad("truncated.jpg", jpeg[: len(jpeg) // 2], "invalid_argument", "truncated")
bad("truncated.png", png[: len(png) // 2], "invalid_argument", "PNG image is corrupt")
bad("truncated.webp", webp[: len(webp) // 2], "invalid_argument", "WebP image is corrupt")
bad("truncated.gif", gifb[: len(gifb) // 2], "invalid_argument", "GIF image is corrupt")
corrupt = bytearray(png)
idat = corrupt.find(b"IDAT")
for i in range(idat + 8, idat + 24):
    corrupt[i] ^= 0x5A
bad("corrupt.png", bytes(corrupt), "invalid_argument", "PNG image is corrupt")
corrupt_jpeg = bytearray(jpeg)
sof = corrupt_jpeg.find(b"\xff\xc0")
corrupt_jpeg[sof + 9] = 7  # 7 components
bad("corrupt.jpg", bytes(corrupt_jpeg), "invalid_argument", "JPEG image is corrupt")
ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
bomb = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(b"\0" * 64)) + png_chunk(b"IEND", b"")
bad("bomb.png", bomb, "payload_too_large", "100000x100000 pixels")
bad("empty.jpg", b"", "invalid_argument", "empty")
bad("text.jpg", b"this is not an image, just a text file called .jpg\n", "unsupported_media_type", "(text)")
bad("image.bmp", saved(rgb, "BMP"), "unsupported_media_type", "BMP images are not supported")
wav = b"RIFF" + struct.pack("<I", 36) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, 16000, 32000, 2, 16) + b"data" + struct.pack("<I", 0)
bad("sound.wav", wav, "unsupported_media_type", "an audio file (WAV)")

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
print("wrote", len(manifest["decode"]), "decode,", len(manifest["resize"]), "resize,", len(manifest["bad"]), "bad fixtures to", out)
