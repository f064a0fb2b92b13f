//! `/developers/team`: members of the project, and the signed-in user's password.

use leptos::{prelude::*, server_fn::ServerFn};

use crate::{
    components::{
        confirm::ConfirmButton,
        hydration::gate,
        layout::{may, Cabinet, CanAct},
        widgets::{error_text, input_value, CopyButton, Time},
    },
    core::permissions::Action as Perm,
    model::{Member, Viewer},
    server_fns::team::{
        invite_member, list_members, remove_member, set_member_role, ChangePassword,
    },
};

#[component]
pub fn TeamPage() -> impl IntoView {
    let version = RwSignal::new(0u32);
    let members = Resource::new(move || version.get(), |_| list_members());
    let gate = gate();
    let change = ServerAction::<ChangePassword>::new();
    let (current, new_password) = (
        NodeRef::<leptos::html::Input>::new(),
        NodeRef::<leptos::html::Input>::new(),
    );
    let invite_email = RwSignal::new(String::new());
    let invite = Action::new(move |_: &()| invite_member(invite_email.get_untracked()));
    let remove = Action::new(move |email: &String| remove_member(email.clone()));
    // Owners who make themselves members lose the team's controls: the page is drawn again
    // for the role they now have.
    let set_role = Action::new(move |(email, role, mine): &(String, String, bool)| {
        let (email, role, mine) = (email.clone(), role.clone(), *mine);
        async move {
            let done = set_member_role(email, role).await;
            if done.is_ok() && mine {
                let _ = window().location().reload();
            }
            done
        }
    });
    // After a change, refused or not, the list shows every role as the server has it.
    Effect::new(move |_| {
        if matches!(remove.value().get(), Some(Ok(()))) || set_role.value().get().is_some() {
            version.update(|v| *v += 1);
        }
    });
    view! {
        <Cabinet title="Team">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match members.await {
                        Ok(list) => view! {
                            <table class="grid">
                                <thead><tr><th>"Member"</th><th>"Role"</th><th>"Since"</th><th></th></tr></thead>
                                <tbody>
                                    {
                                        let owners = list.iter().filter(|m| m.role == "owner").count();
                                        list.into_iter().map(move |m| member_row(m, owners == 1, set_role, remove)).collect_view()
                                    }
                                </tbody>
                            </table>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{error_text(&e)}</p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Suspense>
            {move || remove.value().get().and_then(|r| r.err()).map(|e| view! { <p class="error" role="alert" data-testid="member-error">{error_text(&e)}</p> })}
            {move || set_role.value().get().and_then(|r| r.err()).map(|e| view! { <p class="error" role="alert" data-testid="member-error">{error_text(&e)}</p> })}
            <CanAct action=Perm::ManageTeam><h2>"Invite a member"</h2>
            <form class="filters" on:submit=move |ev| { ev.prevent_default(); invite.dispatch(()); }>
                <input type="email" placeholder="colleague@example.com" aria-label="Email to invite" data-testid="invite-email"
                    prop:value=move || invite_email.get() on:input=move |ev| invite_email.set(event_target_value(&ev))/>
                <button type="submit" class="primary" data-testid="invite-button">"Create invitation link"</button>
            </form></CanAct>
            {move || match invite.value().get() {
                Some(Ok(link)) => view! {
                    <p class="newkey" role="status">"Send this one-time link (valid 7 days): "<code data-testid="invite-link">{link.clone()}</code>" "<CopyButton text=link.clone() what="invitation link"/></p>
                }.into_any(),
                Some(Err(e)) => view! { <p class="error" role="alert">{error_text(&e)}</p> }.into_any(),
                None => ().into_any(),
            }}
            <h2>"Change your password"</h2>
            <form class="stack" method="post" action=ChangePassword::url()
                on:submit=move |ev| {
                    ev.prevent_default();
                    change.dispatch(ChangePassword { current: input_value(current), new_password: input_value(new_password) });
                }>
                <label>"Current password "<input type="password" name="current" autocomplete="current-password" required data-testid="current-password" node_ref=current/></label>
                <label>"New password (8+ characters) "<input type="password" name="new_password" autocomplete="new-password" minlength="8" required data-testid="new-password" node_ref=new_password/></label>
                <button type="submit" class="primary" data-testid="change-password-button">"Change password"</button>
                {move || match change.value().get() {
                    Some(Ok(())) => view! { <p class="note ok" role="status">"Password changed."</p> }.into_any(),
                    Some(Err(e)) => view! { <p class="error" role="alert">{error_text(&e)}</p> }.into_any(),
                    None => ().into_any(),
                }}
            </form>
        </Cabinet>
    }
}

type RoleChange = Action<(String, String, bool), Result<(), ServerFnError>>;

/// One member: an owner sees the role as a control and a Remove, except on the only owner,
/// whom neither may leave the role (the server refuses it too: someone must manage the team).
fn member_row(
    m: Member,
    only_owner: bool,
    set_role: RoleChange,
    remove: Action<String, Result<(), ServerFnError>>,
) -> impl IntoView {
    let email = m.email.clone();
    let last = only_owner && m.role == "owner";
    let what =
        format!("{email} loses access to this project at once; an invitation can bring them back.");
    let role = m.role.clone();
    let role_email = email.clone();
    let mine = use_context::<Viewer>().is_some_and(|v| v.email == m.email);
    view! {
        <tr data-testid="member-row"><td>{m.email.clone()}</td>
            <td data-label="Role">
                {if may(Perm::ManageTeam) {
                    view! {
                        <select data-testid="role-select" aria-label=format!("Role of {role_email}") disabled=last
                            title=last.then_some("The only owner: make someone else an owner first.")
                            on:change={
                                let email = role_email.clone();
                                move |ev| { set_role.dispatch((email.clone(), event_target_value(&ev), mine)); }
                            }>
                            <option value="owner" selected=role == "owner">"owner"</option>
                            <option value="member" selected=role == "member">"member"</option>
                        </select>
                    }.into_any()
                } else {
                    role.into_any()
                }}
            </td>
            <td data-label="Since"><Time at=m.since/></td>
            <td>{(!last).then(|| view! {
                <CanAct action=Perm::ManageTeam><ConfirmButton label="Remove" class="link danger" testid="remove-member-button" confirm="Remove"
                    title="Remove this member?" what=what
                    pending=Signal::derive(move || remove.pending().get())
                    on_confirm=move || { remove.dispatch(email.clone()); }/></CanAct>
            })}</td></tr>
    }
}

/// `/invite/{token}`: join a project with a one-time link.
#[component]
pub fn InvitePage() -> impl IntoView {
    use crate::server_fns::team::{get_invitation, AcceptInvitation};
    use leptos_router::hooks::use_params_map;
    let params = use_params_map();
    let token = move || params.read().get("token").unwrap_or_default();
    let invitation = Resource::new(token, get_invitation);
    let gate = gate();
    let accept = ServerAction::<AcceptInvitation>::new();
    let password = NodeRef::<leptos::html::Input>::new();
    view! {
        <main class="login">
            <Suspense fallback=|| view! { <p class="loading">"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let content = match invitation.await {
                        Ok(inv) => view! {
                            <h1>{format!("Join {}", inv.project)}</h1>
                            <p>{format!("Invitation for {}.", inv.email)}</p>
                            {if inv.has_account && !inv.signed_in_as_invitee {
                                view! {
                                    <p data-testid="invite-sign-in">{format!("{} already has an account. Sign in as {}, then open this link again.", inv.email, inv.email)}</p>
                                    <p><a href="/login">"Sign in"</a></p>
                                }.into_any()
                            } else {
                                let has_account = inv.has_account;
                                view! {
                                    <form method="post" action=AcceptInvitation::url()
                                        on:submit=move |ev| {
                                            ev.prevent_default();
                                            let password = Some(input_value(password)).filter(|_| !has_account);
                                            accept.dispatch(AcceptInvitation { token: token(), password });
                                        }>
                                        <input type="hidden" name="token" value=token()/>
                                        {(!inv.has_account).then(|| view! {
                                            <label>"Choose a password (8+ characters)"
                                                <input type="password" name="password" required data-testid="invite-password" node_ref=password/>
                                            </label>
                                        })}
                                        <button type="submit" data-testid="accept-invite-button">"Join"</button>
                                        {move || accept.value().get().and_then(|r| r.err()).map(|e| view! { <p class="error" role="alert">{error_text(&e)}</p> })}
                                    </form>
                                }.into_any()
                            }}
                        }.into_any(),
                        Err(e) => view! { <h1>"Invitation"</h1><p class="error" role="alert" data-testid="invite-error">{error_text(&e)}</p><p><a href="/login">"Sign in"</a></p> }.into_any(),
                    };
                    view! { {gate.open()} {content} }
                })}
            </Suspense>
        </main>
    }
}
