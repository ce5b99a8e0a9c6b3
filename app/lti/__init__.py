"""tensorjudge as an LTI 1.3 tool (pylti1p3 over FastAPI): OIDC login, resource-link and
deep-linking launches, grade passback (Assignment and Grade Services) and the roster (Names
and Role Provisioning Services). docs/courses.md says how to register it with a platform."""
