"""The image service sets Pillow's process-wide pixel limit on every decode;
put it back after each test so a test that lowers `max_pixels` cannot
change what later tests may open."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PIL import Image


@pytest.fixture(autouse=True)
def _restore_pillow_pixel_limit() -> Iterator[None]:
    saved = Image.MAX_IMAGE_PIXELS
    yield
    Image.MAX_IMAGE_PIXELS = saved
