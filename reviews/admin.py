from django.contrib import admin

from .models import ApiToken, AuditEvent, Run


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["run_id", "system", "status", "created_at"]
    list_filter = ["status", "system"]
    readonly_fields = ["status", "status_reason", "manifest_sha256"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ["name", "user", "key_prefix", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["key_sha256", "key_prefix", "created_at", "last_used_at"]


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["run", "seq", "actor", "action", "object_type", "object_id", "created_at"]
    list_filter = ["action"]

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_add_permission(self, request):
        return False
