"""Audit rows are append-only, refused by PostgreSQL itself; the four role groups exist."""
from django.db import migrations

APPEND_ONLY = """
CREATE OR REPLACE FUNCTION reviews_auditevent_refuse_change() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'audit events are append-only: % refused on reviews_auditevent', TG_OP
        USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS reviews_auditevent_append_only ON reviews_auditevent;
CREATE TRIGGER reviews_auditevent_append_only
    BEFORE UPDATE OR DELETE ON reviews_auditevent
    FOR EACH ROW EXECUTE FUNCTION reviews_auditevent_refuse_change();
DROP TRIGGER IF EXISTS reviews_auditevent_no_truncate ON reviews_auditevent;
CREATE TRIGGER reviews_auditevent_no_truncate
    BEFORE TRUNCATE ON reviews_auditevent
    FOR EACH STATEMENT EXECUTE FUNCTION reviews_auditevent_refuse_change();
"""

DROP = """
DROP TRIGGER IF EXISTS reviews_auditevent_append_only ON reviews_auditevent;
DROP TRIGGER IF EXISTS reviews_auditevent_no_truncate ON reviews_auditevent;
DROP FUNCTION IF EXISTS reviews_auditevent_refuse_change();
"""

SQLITE_APPEND_ONLY = [
    "CREATE TRIGGER IF NOT EXISTS reviews_auditevent_no_update BEFORE UPDATE ON reviews_auditevent "
    "BEGIN SELECT RAISE(ABORT, 'audit events are append-only: UPDATE refused'); END;",
    "CREATE TRIGGER IF NOT EXISTS reviews_auditevent_no_delete BEFORE DELETE ON reviews_auditevent "
    "BEGIN SELECT RAISE(ABORT, 'audit events are append-only: DELETE refused'); END;",
]


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(APPEND_ONLY, params=None)
    elif schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_APPEND_ONLY:
            schema_editor.execute(statement)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)
    elif schema_editor.connection.vendor == "sqlite":
        schema_editor.execute("DROP TRIGGER IF EXISTS reviews_auditevent_no_update")
        schema_editor.execute("DROP TRIGGER IF EXISTS reviews_auditevent_no_delete")


def create_roles(apps, schema_editor):
    Group = apps.get_model("auth", "Group")
    for role in ("agent", "reviewer", "auditor", "admin"):
        Group.objects.get_or_create(name=role)


class Migration(migrations.Migration):
    dependencies = [("reviews", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length")]

    operations = [
        migrations.RunPython(forwards, backwards),
        migrations.RunPython(create_roles, migrations.RunPython.noop),
    ]
