"""The SVG allow-list (assets/svg.py): every way of smuggling script or a
remote load into an SVG that got past the old deny-list is refused with 415,
and so are other variants of the same classes; the SVG that drawing programs
write is still accepted."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from quire.app import Quire
from quire.assets import sniff
from tests.assets.helpers import solid, upload, upload_one
from tests.conftest import Api
from tests.storage import stored_keys

HEAD = b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
PNG64 = base64.b64encode(solid(2, 2)).decode()


def svg(body: str) -> bytes:
    return HEAD + body.encode() + b"</svg>"


SMUGGLED = {
    # javascript: split by character references, in animation values
    "animate values split by tab": '<a href="#x"><animate attributeName="href" values="java&#9;script:alert(1)"/>'
                                   '<rect width="9" height="9"/></a>',
    "animate values split by newline": '<a><animate attributeName="href" values="#x;java&#10;script:alert(1)"/>'
                                       '<rect width="9" height="9"/></a>',
    "set to split by tab": '<a><set attributeName="href" to="javas&#9;cript:alert(1)"/><rect/></a>',
    "set to xlink:href": '<a><set attributeName="xlink:href" to="javascript:alert(1)"/><rect/></a>',
    "animate a harmless attribute to javascript:": '<rect><set attributeName="fill" to="java&#10;script:x"/></rect>',
    "animate style": '<rect><set attributeName="style" to="fill:url(https://evil.example/a)"/></rect>',
    "animate event handler": '<rect><set attributeName="onclick" to="alert(1)"/></rect>',
    "animation event attribute": '<rect><animate attributeName="x" onbegin="alert(1)" dur="1s"/></rect>',
    # CSS that loads
    "style @import url": "<style>@import url(https://evil.example/x.css);</style>",
    "style @import string": '<style>@import "https://evil.example/x.css";</style>',
    "style @import in CDATA": "<style><![CDATA[@import url(//evil.example/x.css);]]></style>",
    "style @font-face": "<style>@font-face{font-family:x;src:url(https://evil.example/f.woff)}</style>",
    "style url in a rule": "<style>rect{fill:url(https://evil.example/p.svg#a)}</style>",
    "style escaped url": "<style>rect{fill:u\\72l(https://evil.example/p.svg#a)}</style>",
    "style image-set": "<style>rect{background:image-set('https://evil.example/x.png' 1x)}</style>",
    "style unclosed url": "<style>rect{fill:url(https://evil.example/p.svg#a</style>",
    "style attribute url": '<rect style="fill:url(https://evil.example/p.svg#a)"/>',
    "style attribute url with spaces": '<rect style="fill: url( \'//evil.example/p.svg#a\' )"/>',
    "style attribute image-set": '<rect style="background:-webkit-image-set(\'//evil.example/x\' 1x)"/>',
    "style attribute expression": '<rect style="width:expression(alert(1))"/>',
    "presentation attribute remote url": '<rect fill="url(https://evil.example/p.svg#a)"/>',
    # references
    "use href data:": '<use href="data:image/svg+xml;base64,PHN2Zz48c2NyaXB0PmFsZXJ0KDEpPC9zY3JpcHQ+PC9zdmc+"/>',
    "use xlink:href data:": '<use xlink:href="data:image/svg+xml,&lt;svg/&gt;#x"/>',
    "use external file": '<use href="/storage/uploads/2026/01/01/x.svg#a"/>',
    "image svg data:": '<image href="data:image/svg+xml;base64,PHN2Zy8+"/>',
    "image remote": '<image href="https://evil.example/x.png"/>',
    "feImage remote": '<filter id="f"><feImage href="https://evil.example/x.png"/></filter>',
    "a href javascript with a leading space": '<a href=" javascript:alert(1)"><rect/></a>',
    "a href javascript split by newline": '<a xlink:href="java&#10;script:alert(1)"><rect/></a>',
    "xml:base": '<g xml:base="javascript:alert(1)//"><a href="#x"><rect/></a></g>',
    # elements and namespaces
    "script": "<script>alert(1)</script>",
    "script inside editor metadata": '<metadata><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
                                     "<script>alert(1)</script></rdf:RDF></metadata>",
    "foreignObject": "<foreignObject><p>x</p></foreignObject>",
    "iframe": '<iframe src="https://evil.example"/>',
    "handler": '<handler type="application/ecmascript">alert(1)</handler>',
    "xhtml element": '<h:script xmlns:h="http://www.w3.org/1999/xhtml">alert(1)</h:script>',
    "mathml element": '<math xmlns="http://www.w3.org/1998/Math/MathML"><mi>x</mi></math>',
    "event handler": '<rect onclick="alert(1)"/>',
    "unknown attribute": '<rect formaction="javascript:alert(1)"/>',
}


@pytest.mark.parametrize("case", sorted(SMUGGLED))
def test_smuggled_script_or_remote_load_is_refused(admin: Api, quire: Quire, data_dir: Path, case: str) -> None:
    response = upload(admin, ("x.svg", svg(SMUGGLED[case]), "image/svg+xml"))
    assert response.status_code == 415, response.text
    assert response.json()["error"].startswith("File x.svg: SVG")
    assert stored_keys(quire.assets.uploads) == []
    assert quire.assets.assets.find() == []


ACCEPTED = {
    "illustrator": (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<svg version="1.1" id="Layer_1" xmlns="http://www.w3.org/2000/svg" x="0px" y="0px" '
        'viewBox="0 0 100 100" style="enable-background:new 0 0 100 100;" xml:space="preserve">'
        '<style type="text/css">.st0{fill:#1D78C7;stroke:rgba(0,0,0,.5)} .st1{fill:url(#g1)}</style>'
        '<linearGradient id="g1" gradientUnits="userSpaceOnUse" x1="0" y1="0" x2="100" y2="0">'
        '<stop offset="0" style="stop-color:#FFFFFF"/><stop offset="1" style="stop-color:#000000"/>'
        '</linearGradient><g data-name="Layer 1"><rect class="st0" width="50" height="50"/>'
        '<circle class="st1" cx="75" cy="75" r="20"/></g></svg>'
    ),
    "inkscape": (
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'xmlns:inkscape="http://www.inkscape.org/namespaces/inkscape" '
        'xmlns:sodipodi="http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd" '
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:cc="http://creativecommons.org/ns#" width="10mm" height="10mm" sodipodi:docname="logo.svg">'
        '<sodipodi:namedview id="nv" pagecolor="#ffffff" inkscape:zoom="1"/>'
        '<metadata><rdf:RDF><cc:Work rdf:about=""><dc:format>image/svg+xml</dc:format></cc:Work></rdf:RDF>'
        '</metadata><defs><filter id="blur"><feGaussianBlur stdDeviation="2"/></filter>'
        '<path id="p" d="M0 0L10 10"/></defs>'
        '<g inkscape:label="Layer 1" inkscape:groupmode="layer"><use xlink:href="#p" filter="url(#blur)"/>'
        f'<image width="2" height="2" xlink:href="data:image/png;base64,{PNG64}"/>'
        '<text xml:space="preserve" font-family="\'Open Sans\'"><tspan sodipodi:role="line">Hi</tspan></text>'
        '</g></svg>'
    ),
    "animation of drawing attributes": (
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10"><rect width="10" height="10">'
        '<animate attributeName="opacity" values="0;1;0" dur="2s" repeatCount="indefinite"/>'
        '<animateTransform attributeName="transform" type="rotate" from="0 5 5" to="360 5 5" dur="3s"/>'
        '<set attributeName="fill" to="url(#g)" begin="click"/></rect>'
        '<a href="#top"><circle r="2" style="fill:hsl(200 50% 50%);transform:translate(1px,2px)"/></a></svg>'
    ),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_svg_from_drawing_programs_is_accepted_unchanged(admin: Api, anon: Api, case: str) -> None:
    content = ACCEPTED[case].encode()
    asset = upload_one(admin, f"{case}.svg", content, "image/svg+xml")
    assert asset["mime"] == "image/svg+xml"
    assert anon.get(f"/storage/uploads{asset['path']}").content == content  # stored as sent


def test_the_refusal_names_what_is_not_allowed() -> None:
    with pytest.raises(sniff.Refused, match="may not animate 'href'"):
        sniff.check_svg(svg('<a href="#a"><animate attributeName="href" values="#a;#b"/><rect/></a>'))
    with pytest.raises(sniff.Refused, match="'javascript:' URL"):
        sniff.check_svg(svg(SMUGGLED["animate a harmless attribute to javascript:"]))
    with pytest.raises(sniff.Refused, match="@import"):
        sniff.check_svg(svg(SMUGGLED["style @import url"]))
    with pytest.raises(sniff.Refused, match="only #fragment"):
        sniff.check_svg(svg(SMUGGLED["use href data:"]))


PREFIXED = '<x:svg xmlns:x="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">{}</x:svg>'


@pytest.mark.parametrize("case", ["style @import url", "use href data:", "style attribute url", "xml:base",
                                  "animate style", "image remote", "unknown attribute"])
def test_svg_under_a_namespace_prefix_meets_the_svg_check(admin: Api, quire: Quire, case: str) -> None:
    """`<x:svg xmlns:x="...svg">` has no `<svg` in it, so it was sniffed as
    XML and only met the XML deny-list: `@import` and `<use href="data:">`
    were stored (and a browser renders such a file as SVG)."""
    body = SMUGGLED[case]
    prefixed = __import__("re").sub(r"<(/?)([a-zA-Z])", r"<\1x:\2", body)
    response = upload(admin, ("x.xml", PREFIXED.format(prefixed).encode(), "application/xml"))
    assert response.status_code == 415, response.text
    assert "SVG" in response.json()["error"]
    assert stored_keys(quire.assets.uploads) == []


def test_prefixed_svg_that_only_draws_is_accepted(admin: Api) -> None:
    asset = upload_one(admin, "d.xml", PREFIXED.format('<x:rect width="5" height="5" fill="url(#g)"/>').encode(),
                       "application/xml")
    assert asset["mime"] == "application/xml"


@pytest.mark.parametrize(("head", "size"), [
    ('width="120" height="80"', [120, 80]),
    ('width="120px" height="80.4px" viewBox="0 0 12 8"', [120, 80]),
    ('viewBox="0 0 300 150"', [300, 150]),
    ('width="50%" height="50%" viewBox="0,0,64,32"', [64, 32]),
    ('width="10em" height="3em"', [None, None]),
    ("", [None, None]),
])
def test_an_svg_has_the_pixel_size_it_declares(admin: Api, head: str, size: list[int | None]) -> None:
    data = f'<svg xmlns="http://www.w3.org/2000/svg" {head}><rect width="1" height="1"/></svg>'.encode()
    asset = upload_one(admin, "shape.svg", data)
    assert [asset["width"], asset["height"]] == size
