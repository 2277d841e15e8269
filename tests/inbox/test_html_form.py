"""A plain HTML form on a web page posts to the submit endpoint: the exact
bodies a browser sends for

    <form method="post" action="https://cms.example/api/inbox/submit/TOKEN?success=/thanks"
          [enctype="multipart/form-data"]>
      <input name="data[name]"> <input name="data[email]">
      <input type="checkbox" name="data[topics][]" value="..."> (two checked)
      <input type="file" name="data[files][]" multiple>   (multipart only)
    </form>

and the browser follows the 303 to the thank-you page."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.client import TestClient
from tests.conftest import Api
from tests.inbox.conftest import PDF, make_form, png, stored

PAGE = "https://www.example.com/contact"
BOUNDARY = "----WebKitFormBoundary7MA4YWxkTrZu0gW"


def browser_headers(content_type: str) -> dict[str, str]:
    return {"content-type": content_type, "origin": "https://www.example.com", "referer": PAGE,
            "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0",
            "accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.fixture
def page_form(admin: Api) -> dict[str, Any]:
    return make_form(admin, name="Contact", domains=["example.com"],
                     fields=["name", "email", "topics", "files"], honeypot="website")


def follow(client: TestClient, token: str, body: bytes, content_type: str) -> Any:
    response = client.post(f"/api/inbox/submit/{token}?success=/thanks", content=body,
                           headers=browser_headers(content_type), follow_redirects=True)
    assert [r.status_code for r in response.history] == [303], response.text
    assert response.history[0].headers["location"] == "/thanks"
    # the browser went on with a GET to the thank-you page (which this CMS does not serve)
    assert response.request.method == "GET" and response.url.path == "/thanks"
    return response


def test_urlencoded_html_form(client: TestClient, page_form: dict[str, Any], quire: Quire) -> None:
    body = (b"data%5Bname%5D=Ada+Lovelace&data%5Bemail%5D=ada%40example.com"
            b"&data%5Btopics%5D%5B%5D=maths&data%5Btopics%5D%5B%5D=engines"
            b"&data%5Bwebsite%5D=&data%5Bmessage%5D=Gr%C3%BC%C3%9Fe%0D%0Amore")
    follow(client, page_form["token"], body, "application/x-www-form-urlencoded")
    [record] = stored(quire, page_form["_id"])
    assert record["data"] == {"name": "Ada Lovelace", "email": "ada@example.com", "topics": ["maths", "engines"]}
    assert record["attachments"] == {} and record["spam"] is False


def part(name: str, value: str) -> bytes:
    return (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n').encode()


def file_part(name: str, filename: str, kind: str, content: bytes) -> bytes:
    return (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: {kind}\r\n\r\n").encode() + content + b"\r\n"


def test_multipart_html_form_with_two_files(client: TestClient, page_form: dict[str, Any], quire: Quire) -> None:
    image = png((10, 20, 30))
    body = (part("data[name]", "Ada Lovelace") + part("data[email]", "ada@example.com")
            + part("data[topics][]", "maths") + part("data[topics][]", "engines") + part("data[website]", "")
            + file_part("data[files][]", "photo.png", "image/png", image)
            + file_part("data[files][]", "notes.pdf", "application/pdf", PDF)
            + f"--{BOUNDARY}--\r\n".encode())
    follow(client, page_form["token"], body, f"multipart/form-data; boundary={BOUNDARY}")
    [record] = stored(quire, page_form["_id"])
    assert record["data"] == {"name": "Ada Lovelace", "email": "ada@example.com", "topics": ["maths", "engines"]}
    files = record["attachments"]["files"]
    assert [(a["name"], a["mime"], a["size"]) for a in files] == [
        ("photo.png", "image/png", len(image)), ("notes.pdf", "application/pdf", len(PDF))]
    assert [quire.assets.uploads.read(a["file"]) for a in files] == [image, PDF]


def test_multipart_html_form_with_the_file_input_left_empty(client: TestClient, page_form: dict[str, Any],
                                                            quire: Quire) -> None:
    body = (part("data[name]", "Ada") + part("data[email]", "ada@example.com")
            + file_part("data[files][]", "", "application/octet-stream", b"")
            + f"--{BOUNDARY}--\r\n".encode())
    follow(client, page_form["token"], body, f"multipart/form-data; boundary={BOUNDARY}")
    [record] = stored(quire, page_form["_id"])
    assert record["data"] == {"name": "Ada", "email": "ada@example.com"} and record["attachments"] == {}


def test_the_same_form_posted_from_another_site_is_refused(client: TestClient, page_form: dict[str, Any],
                                                           quire: Quire) -> None:
    headers = {**browser_headers("application/x-www-form-urlencoded"), "origin": "https://phish.example.net",
               "referer": "https://phish.example.net/contact"}
    response = client.post(f"/api/inbox/submit/{page_form['token']}?success=/thanks",
                           content=b"data%5Bname%5D=x", headers=headers, follow_redirects=False)
    assert (response.status_code, response.json()) == (412, {"error": "Not allowed"})
    assert stored(quire) == []


def test_bots_filling_the_hidden_field_see_the_thank_you_page(client: TestClient, page_form: dict[str, Any],
                                                              quire: Quire) -> None:
    follow(client, page_form["token"], b"data%5Bname%5D=Bot&data%5Bwebsite%5D=http%3A%2F%2Fspam",
           "application/x-www-form-urlencoded")
    assert stored(quire) == []
