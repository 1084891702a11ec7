import pytest
from django.core.management import CommandError, call_command

from sessions_app.actions import do_register_desktop
from sessions_app.models import Comment

pytestmark = pytest.mark.django_db


def test_it_writes_a_comment_to_the_session_by_name(capsys):
    desk = do_register_desktop(desktop_id="d-1", title="Builder", aliases=["b1"]).session
    call_command("comment", "  B1 ", "run", "the", "tests")
    comment = Comment.objects.get()
    assert comment.session == desk and comment.body == "run the tests"
    assert desk.handle in capsys.readouterr().out


def test_no_session_found_is_a_clear_error():
    with pytest.raises(CommandError, match='No session goes by "nobody"'):
        call_command("comment", "nobody", "hi")
    assert not Comment.objects.exists()


def test_several_sessions_found_is_a_clear_error_listing_them():
    do_register_desktop(desktop_id="d-1", title="twin")
    do_register_desktop(desktop_id="d-2", aliases=["twin"])
    with pytest.raises(CommandError, match="Several sessions go by") as error:
        call_command("comment", "twin", "hi")
    assert "d-1" in str(error.value) and "d-2" in str(error.value)
    assert not Comment.objects.exists()
