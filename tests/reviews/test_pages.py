import pytest

pytestmark = pytest.mark.django_db

# The runs list at "/" is a reviewer page of reconcile: tests/reconcile/test_runs_list.py.


def test_it_serves_the_login_page(client):
    response = client.get("/login/")
    assert response.status_code == 200 and b"Log in" in response.content


def test_it_brings_a_reviewer_to_the_runs_list_after_logging_in(client, reviewer):
    reviewer.user.set_password("pw-reviewer-login-123")
    reviewer.user.save(update_fields=["password"])
    response = client.post("/login/", {"username": reviewer.user.username, "password": "pw-reviewer-login-123"})
    assert response.status_code == 302 and response["Location"] == "/"
