//! The management key's copies of the dashboard's organization routes, in the document: the
//! same operation at `/v1/management/...` without `{slug}`, secured by the management key,
//! its 401 and 403 the key's and its 404 without "not one of the caller's tenants". The
//! routes themselves are registered twice with the same handlers (see [`super::OrgAdmin`]).

use utoipa::openapi::{
    path::{Operation, PathItem},
    security::SecurityRequirement,
    OpenApi, RefOr,
};

use super::{DASHBOARD_PREFIX, MANAGEMENT_PREFIX};

/// The dashboard paths that have a management-key copy, after [`DASHBOARD_PREFIX`].
pub const MIRRORED: [&str; 2] = ["/organizations", "/organization-roles"];

/// The management path of a dashboard path that has a copy.
pub fn management_path(dashboard: &str) -> Option<String> {
    let rest = dashboard.strip_prefix(DASHBOARD_PREFIX)?;
    MIRRORED
        .iter()
        .any(|m| rest == *m || rest.starts_with(&format!("{m}/")))
        .then(|| format!("{MANAGEMENT_PREFIX}{rest}"))
}

/// Adds the management key's copy of every mirrored dashboard path to `doc`.
pub fn mirror(doc: &mut OpenApi) {
    let copies: Vec<(String, PathItem)> = doc
        .paths
        .paths
        .iter()
        .filter_map(|(path, item)| {
            let mut item = item.clone();
            for op in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                for_key(op);
            }
            Some((management_path(path)?, item))
        })
        .collect();
    doc.paths.paths.extend(copies);
}

const NOT_CALLERS: &str = "Not one of the caller's tenants";
const OR_NOT_CALLERS: &str = "; or not one of the caller's tenants";

fn for_key(op: &mut Operation) {
    op.operation_id = op.operation_id.take().map(|id| format!("management_{id}"));
    op.tags = Some(vec!["management".to_owned()]);
    op.security = Some(vec![SecurityRequirement::new(
        "management_key",
        Vec::<String>::new(),
    )]);
    if let Some(params) = op.parameters.as_mut() {
        params.retain(|p| p.name != "slug");
    }
    let responses = &mut op.responses.responses;
    let key_error = |description: &str| {
        RefOr::T(
            utoipa::openapi::ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    utoipa::openapi::ContentBuilder::new()
                        .schema(Some(utoipa::openapi::Ref::from_schema_name("ErrorBody")))
                        .build(),
                )
                .build(),
        )
    };
    responses.insert(
        "401".to_owned(),
        key_error("`auth/missing_token`, `auth/invalid_token`, `management/invalid_key`"),
    );
    if responses.contains_key("403") {
        responses.insert(
            "403".to_owned(),
            key_error("`management/forbidden` (viewer key)"),
        );
    }
    let drop_404 = match responses.get_mut("404") {
        Some(RefOr::T(r)) if r.description == NOT_CALLERS => true,
        Some(RefOr::T(r)) => {
            r.description = r.description.replace(OR_NOT_CALLERS, "");
            false
        }
        _ => false,
    };
    if drop_404 {
        responses.remove("404");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_organization_routes_have_copies() {
        let d = "/v1/auth/dashboard/tenants/{slug}";
        assert_eq!(
            management_path(&format!("{d}/organizations/{{org_id}}")).as_deref(),
            Some("/v1/management/organizations/{org_id}")
        );
        assert_eq!(
            management_path(&format!("{d}/organization-roles")).as_deref(),
            Some("/v1/management/organization-roles")
        );
        assert_eq!(management_path(&format!("{d}/users")), None);
        assert_eq!(management_path(&format!("{d}/organizationsx")), None);
        assert_eq!(management_path("/v1/auth/organizations"), None);
    }
}
