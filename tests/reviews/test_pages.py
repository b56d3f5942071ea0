import pytest

pytestmark = pytest.mark.django_db


def test_it_sends_anonymous_visitors_to_login(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_it_serves_the_login_page(client):
    response = client.get("/login/")
    assert response.status_code == 200 and b"Log in" in response.content


def test_it_lists_runs_to_a_reviewer(client, reviewer, run_factory):
    run_factory(run_id="AAS-2026-09-25-supermemory-02")
    client.force_login(reviewer.user)
    response = client.get("/")
    assert response.status_code == 200
    assert b"AAS-2026-09-25-supermemory-02" in response.content
    assert b"htmx-2.0.11.min.js" in response.content


def test_it_refuses_the_runs_page_to_a_user_without_a_role(client, outsider):
    client.force_login(outsider.user)
    assert client.get("/").status_code == 403
