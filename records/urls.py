from django.urls import path

from . import views

urlpatterns = [
    path("runs/<str:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<str:run_id>/members/<str:member_id>/", views.member_detail, name="member-detail"),
]
