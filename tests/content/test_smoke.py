from tests.conftest import Api, create_item, put_model


def test_created_item_is_listed_for_admin(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "posts", {"title": "Hello"})
    listed = admin.get("/api/content/items/posts").json()
    assert [d["_id"] for d in listed] == [item["_id"]]
    assert listed[0]["title"] == "Hello"
