//! The rules of capabilities (DECISIONS.md "Closing the loops"), beside
//! [`crate::policy`]: when a grant gives its holder a capability, which
//! lists of grants a role may be given, how a permission's status may
//! change, and which dependencies a new permission may name. Pure
//! functions: [`crate::permissions`] applies them inside its units of work,
//! and [`crate::admin_principal`] reads the grants of
//! [`ROLES_READING_GRANTS`] of permissions whose status
//! [`grants`](PermissionStatus::grants).

use std::collections::{HashMap, HashSet};

use crate::DomainError;
use crate::policy::Decision;
use crate::users::Role;

/// The capability of the user list, bans and subscriptions.
pub const MANAGE_USERS: &str = "users:manage";
/// The capability of creating and changing permissions and of granting them.
pub const MANAGE_PERMISSIONS: &str = "permissions:manage";
/// The capability of the analytics dashboard.
pub const READ_ANALYTICS: &str = "analytics:read";
/// The capability of moderating posts: approving, hiding, flagging and
/// deleting other people's posts, and the console's moderation queue. A
/// moderator's powers are this grant's.
pub const MODERATE_POSTS: &str = "posts:moderate";

/// Most permissions one role may be granted.
pub const MAX_GRANTS_PER_ROLE: usize = 500;

/// The statuses of a permission (SPEC.md "Permission").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionStatus {
    Active,
    Disabled,
    Archived,
}

impl PermissionStatus {
    pub const ALL: [PermissionStatus; 3] = [
        PermissionStatus::Active,
        PermissionStatus::Disabled,
        PermissionStatus::Archived,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionStatus::Active => "active",
            PermissionStatus::Disabled => "disabled",
            PermissionStatus::Archived => "archived",
        }
    }

    pub fn parse(name: &str) -> Option<PermissionStatus> {
        PermissionStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == name)
    }

    /// Whether a grant of a permission with this status gives anything:
    /// only an active permission does.
    pub fn grants(self) -> bool {
        self == PermissionStatus::Active
    }
}

/// The roles whose grants (and their holders' direct grants) are read: a
/// moderator's ([`MODERATE_POSTS`] is what makes one act as a moderator)
/// and an administrator's. A super admin holds every capability without a
/// grant, and a member's grants give nothing.
pub const ROLES_READING_GRANTS: [Role; 2] = [Role::Moderator, Role::Admin];

/// Whether granting `capability` to `role` gives its holders anything, so
/// that the console offers it: every permission for an administrator (the
/// admin surfaces read them), only [`MODERATE_POSTS`] for a moderator (the
/// one power of the role), nothing for a member or a super admin (who
/// holds every capability anyway).
pub fn gates(role: Role, capability: &str) -> bool {
    match role {
        Role::Admin => true,
        Role::Moderator => capability == MODERATE_POSTS,
        Role::User | Role::SuperAdmin => false,
    }
}

/// Changing which permissions `role` holds: any role but `super_admin`,
/// who holds every capability whatever its grants say.
pub fn edit_grants_of(role: Role) -> Decision {
    if role == Role::SuperAdmin {
        Decision::Forbidden
    } else {
        Decision::Allowed
    }
}

/// A permission as the grant rules see it.
#[derive(Debug, Clone)]
pub struct Grantable {
    pub status: PermissionStatus,
    pub dependencies: Vec<String>,
}

/// Checks that `requested` (distinct names) may be a role's whole list of
/// grants, given every stored permission in `catalog`: each names a
/// permission that exists and is not archived, and each one's dependencies
/// are in the list too. Each refusal is [`DomainError::Invalid`] on
/// `permissions`, naming what is wrong.
pub fn check_grant_list(
    requested: &[String],
    catalog: &HashMap<String, Grantable>,
) -> Result<(), DomainError> {
    let invalid = |reason: String| DomainError::Invalid {
        field: "permissions",
        reason,
    };
    let unknown: Vec<&str> = requested
        .iter()
        .filter(|name| !catalog.contains_key(*name))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(invalid(format!(
            "names permissions that do not exist: {}",
            unknown.join(", ")
        )));
    }
    let archived: Vec<&str> = requested
        .iter()
        .filter(|name| catalog[*name].status == PermissionStatus::Archived)
        .map(String::as_str)
        .collect();
    if !archived.is_empty() {
        return Err(invalid(format!(
            "names archived permissions, which cannot be granted: {}",
            archived.join(", ")
        )));
    }
    let listed: HashSet<&str> = requested.iter().map(String::as_str).collect();
    for name in requested {
        if let Some(missing) = catalog[name]
            .dependencies
            .iter()
            .find(|dependency| !listed.contains(dependency.as_str()))
        {
            return Err(invalid(format!(
                "{name} depends on {missing}, which the list leaves out"
            )));
        }
    }
    Ok(())
}

/// Checks a change of a permission whose status is `from` (to its status
/// or its texts): an archived permission is kept as it was and changes no
/// more ([`DomainError::InvalidTransition`]); any other may change, and
/// become active, disabled or archived.
pub fn change_permission(from: PermissionStatus) -> Result<(), DomainError> {
    if from == PermissionStatus::Archived {
        return Err(DomainError::InvalidTransition(
            "an archived permission changes no more".to_owned(),
        ));
    }
    Ok(())
}

/// Archiving `name`: refused while a permission that is not archived
/// depends on it (`dependents`, each with its status), since that one could
/// then never be granted ([`DomainError::InvalidTransition`] naming them).
pub fn archive(name: &str, dependents: &[(String, PermissionStatus)]) -> Result<(), DomainError> {
    let blocking: Vec<&str> = dependents
        .iter()
        .filter(|(_, status)| *status != PermissionStatus::Archived)
        .map(|(dependent, _)| dependent.as_str())
        .collect();
    if blocking.is_empty() {
        Ok(())
    } else {
        Err(DomainError::InvalidTransition(format!(
            "{} depend on {name}; archive or change them first",
            blocking.join(", ")
        )))
    }
}

/// Checks the dependencies of a new permission `name` against `graph`
/// (every stored permission's name and dependencies): each names a stored
/// permission (or `name` itself, which is then a cycle), and together with
/// the stored ones they form no cycle. Each refusal is
/// [`DomainError::Invalid`] on `dependencies`.
pub fn check_new_dependencies(
    name: &str,
    dependencies: &[String],
    mut graph: HashMap<String, Vec<String>>,
) -> Result<(), DomainError> {
    let missing: Vec<&str> = dependencies
        .iter()
        .filter(|dependency| *dependency != name && !graph.contains_key(*dependency))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(DomainError::Invalid {
            field: "dependencies",
            reason: format!(
                "names permissions that do not exist: {}",
                missing.join(", ")
            ),
        });
    }
    graph.insert(name.to_owned(), dependencies.to_vec());
    match cycle_from(&graph, name) {
        Some(cycle) => Err(DomainError::Invalid {
            field: "dependencies",
            reason: format!("would form a cycle: {}", cycle.join(" → ")),
        }),
        None => Ok(()),
    }
}

/// A cycle of dependencies reachable from `start`, as the names along it
/// (the first repeated at the end), if there is one.
fn cycle_from(graph: &HashMap<String, Vec<String>>, start: &str) -> Option<Vec<String>> {
    /// Depth-first, with the path so far; `done` holds names whose
    /// dependencies were searched in full without finding a cycle.
    fn visit<'a>(
        graph: &'a HashMap<String, Vec<String>>,
        name: &'a str,
        path: &mut Vec<&'a str>,
        done: &mut HashSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|seen| *seen == name) {
            let mut cycle: Vec<String> = path[at..].iter().map(|s| (*s).to_owned()).collect();
            cycle.push(name.to_owned());
            return Some(cycle);
        }
        if done.contains(name) {
            return None;
        }
        path.push(name);
        for dependency in graph.get(name).into_iter().flatten() {
            if let Some(cycle) = visit(graph, dependency, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(name);
        None
    }
    visit(graph, start, &mut Vec::new(), &mut HashSet::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Actor, administer};

    /// What each role holds on a new install, as migrations 0001 and 0029
    /// seed it: `permissions:manage` is nobody's but the super admin's.
    const DEFAULT_GRANTS: [(Role, &[&str]); 2] = [
        (Role::Moderator, &[MODERATE_POSTS]),
        (Role::Admin, &[MANAGE_USERS, MODERATE_POSTS, READ_ANALYTICS]),
    ];

    /// Whether a grant with the permission in `grant` status (`None`: not
    /// granted) reaches a user's capabilities, as
    /// `admin_principal::capabilities_sql` reads them.
    fn held(role: Role, grant: Option<PermissionStatus>) -> bool {
        ROLES_READING_GRANTS.contains(&role) && grant.is_some_and(PermissionStatus::grants)
    }

    const CAPABILITIES: [&str; 4] = [
        MANAGE_USERS,
        MODERATE_POSTS,
        MANAGE_PERMISSIONS,
        READ_ANALYTICS,
    ];

    /// The status the default grants give `role` for `capability`, with
    /// every granted permission in `status`.
    fn default_grant(
        role: Role,
        capability: &str,
        status: PermissionStatus,
    ) -> Option<PermissionStatus> {
        DEFAULT_GRANTS
            .iter()
            .any(|(holder, names)| *holder == role && names.contains(&capability))
            .then_some(status)
    }

    /// One letter per capability (columns in [`CAPABILITIES`] order) for
    /// each role (rows: user, moderator, admin, super_admin): whether the
    /// admin surface admits them on a route needing it, with the default
    /// grants and every permission in `status`.
    fn table(status: PermissionStatus) -> Vec<String> {
        Role::ALL
            .iter()
            .map(|role| {
                CAPABILITIES
                    .iter()
                    .map(|capability| {
                        let holds = held(*role, default_grant(*role, capability, status));
                        let actor = Actor {
                            user_id: 1,
                            role: *role,
                        };
                        match administer(actor, holds) {
                            Decision::Allowed => 'A',
                            Decision::Forbidden => 'F',
                            Decision::Hidden => 'H',
                        }
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn every_role_against_every_capability_and_status() {
        //                                        users mod perms analytics
        assert_eq!(
            table(PermissionStatus::Active),
            ["FFFF", "FFFF", "AAFA", "AAAA"]
        );
        assert_eq!(
            table(PermissionStatus::Disabled),
            ["FFFF", "FFFF", "FFFF", "AAAA"]
        );
        assert_eq!(
            table(PermissionStatus::Archived),
            ["FFFF", "FFFF", "FFFF", "AAAA"]
        );
    }

    #[test]
    fn only_moderators_and_administrators_grants_of_active_permissions_are_read() {
        let rows: Vec<String> = Role::ALL
            .iter()
            .map(|role| {
                [
                    None,
                    Some(PermissionStatus::Active),
                    Some(PermissionStatus::Disabled),
                    Some(PermissionStatus::Archived),
                ]
                .into_iter()
                .map(|grant| if held(*role, grant) { 'Y' } else { 'N' })
                .collect()
            })
            .collect();
        // A super admin's grants are not read: they hold every capability
        // without one ([`administer`]).
        assert_eq!(rows, ["NNNN", "NYNN", "NYNN", "NNNN"]);
    }

    #[test]
    fn the_console_offers_a_role_only_the_grants_that_give_it_something() {
        let rows: Vec<String> = Role::ALL
            .iter()
            .map(|role| {
                CAPABILITIES
                    .iter()
                    .map(|capability| if gates(*role, capability) { 'Y' } else { 'N' })
                    .collect()
            })
            .collect();
        //                 users mod perms analytics
        assert_eq!(rows, ["NNNN", "NYNN", "YYYY", "NNNN"]);
    }

    #[test]
    fn only_super_admin_grants_are_fixed() {
        let rows: Vec<bool> = Role::ALL
            .iter()
            .map(|role| edit_grants_of(*role).is_allowed())
            .collect();
        assert_eq!(rows, [true, true, true, false]);
    }

    #[test]
    fn archived_permissions_change_no_more() {
        let changeable: Vec<bool> = PermissionStatus::ALL
            .iter()
            .map(|from| match change_permission(*from) {
                Ok(()) => true,
                Err(DomainError::InvalidTransition(_)) => false,
                Err(other) => panic!("{other}"),
            })
            .collect();
        //                      active disabled archived
        assert_eq!(changeable, [true, true, false]);
    }

    #[test]
    fn archiving_waits_for_the_permissions_depending_on_it() {
        assert!(archive("a", &[]).is_ok());
        assert!(archive("a", &[("b".to_owned(), PermissionStatus::Archived)]).is_ok());
        for status in [PermissionStatus::Active, PermissionStatus::Disabled] {
            let refused = archive("a", &[("b".to_owned(), status)]).unwrap_err();
            assert_eq!(
                refused.to_string(),
                "b depend on a; archive or change them first"
            );
        }
    }

    fn catalog(entries: &[(&str, PermissionStatus, &[&str])]) -> HashMap<String, Grantable> {
        entries
            .iter()
            .map(|(name, status, dependencies)| {
                (
                    (*name).to_owned(),
                    Grantable {
                        status: *status,
                        dependencies: dependencies.iter().map(|d| (*d).to_owned()).collect(),
                    },
                )
            })
            .collect()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn a_grant_list_names_known_grantable_permissions_with_their_dependencies() {
        use PermissionStatus::{Active, Archived, Disabled};
        let catalog = catalog(&[
            ("base", Active, &[]),
            ("off", Disabled, &[]),
            ("gone", Archived, &[]),
            ("view", Active, &["base"]),
            ("edit", Active, &["view"]),
            ("needs_off", Active, &["off"]),
        ]);
        let outcome = |list: &[&str]| match check_grant_list(&names(list), &catalog) {
            Ok(()) => "ok".to_owned(),
            Err(error) => error.to_string(),
        };
        assert_eq!(outcome(&[]), "ok");
        assert_eq!(outcome(&["base", "view", "edit"]), "ok");
        assert_eq!(
            outcome(&["off", "needs_off"]),
            "ok",
            "disabled is grantable"
        );
        assert_eq!(
            outcome(&["view", "edit"]),
            "invalid permissions: view depends on base, which the list leaves out"
        );
        assert_eq!(
            outcome(&["needs_off"]),
            "invalid permissions: needs_off depends on off, which the list leaves out"
        );
        assert_eq!(
            outcome(&["base", "nope", "never"]),
            "invalid permissions: names permissions that do not exist: nope, never"
        );
        assert_eq!(
            outcome(&["base", "gone"]),
            "invalid permissions: names archived permissions, which cannot be granted: gone"
        );
    }

    fn graph(edges: &[(&str, &[&str])]) -> HashMap<String, Vec<String>> {
        edges
            .iter()
            .map(|(name, deps)| ((*name).to_owned(), names(deps)))
            .collect()
    }

    #[test]
    fn a_self_dependency_is_a_cycle() {
        let cycle = cycle_from(&graph(&[("a", &["a"])]), "a").unwrap();
        assert_eq!(cycle, ["a", "a"]);
    }

    #[test]
    fn a_longer_cycle_is_named_in_order() {
        let graph = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"]), ("d", &[])]);
        assert_eq!(cycle_from(&graph, "a").unwrap(), ["a", "b", "c", "a"]);
    }

    #[test]
    fn shared_dependencies_are_not_a_cycle() {
        let graph = graph(&[("a", &["b", "c"]), ("b", &["d"]), ("c", &["d"]), ("d", &[])]);
        assert_eq!(cycle_from(&graph, "a"), None);
    }

    #[test]
    fn new_dependencies_name_stored_permissions_and_close_no_cycle() {
        let stored = graph(&[("base", &[]), ("audit", &["read"])]);
        let outcome = |name: &str, deps: &[&str]| match check_new_dependencies(
            name,
            &names(deps),
            stored.clone(),
        ) {
            Ok(()) => "ok".to_owned(),
            Err(error) => error.to_string(),
        };
        assert_eq!(outcome("view", &["base"]), "ok");
        assert_eq!(
            outcome("view", &["base", "missing"]),
            "invalid dependencies: names permissions that do not exist: missing"
        );
        assert_eq!(
            outcome("self", &["self"]),
            "invalid dependencies: would form a cycle: self → self"
        );
        assert_eq!(
            outcome("read", &["audit"]),
            "invalid dependencies: would form a cycle: read → audit → read"
        );
    }
}
