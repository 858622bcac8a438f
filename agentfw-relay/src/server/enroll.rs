//! Device enrollment (AM5): an invite from the admin, the device's public bundle, and a
//! signature that proves the device holds the bundle's signing key.

use std::sync::Arc;

use agentfw_core::seal::PublicBundle;
use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{Shared, admin::error, now};
use crate::protocol::{CONNECT_PATH, ENROLL_CONTEXT, EnrollRequest, EnrollResponse, enroll_message};
use crate::store::{DeviceRow, Enrolled};

pub(super) async fn enroll(
    State(shared): State<Arc<Shared>>,
    body: Result<Json<EnrollRequest>, JsonRejection>,
) -> Response {
    let Json(request) = match body {
        Ok(b) => b,
        Err(e) => return error(StatusCode::BAD_REQUEST, "relay.bad_request", &e.body_text()),
    };
    let bundle = match PublicBundle::parse(&request.bundle) {
        Ok(b) => b,
        Err(e) => {
            return error(StatusCode::BAD_REQUEST, "relay.bad_bundle", &format!("the public bundle is not valid: {e}"));
        }
    };
    let Ok(signature) = <[u8; 64]>::try_from(request.signature.as_slice()) else {
        return error(StatusCode::BAD_REQUEST, "relay.bad_signature", "the signature must be 64 bytes");
    };
    if bundle.verify_statement(ENROLL_CONTEXT, &enroll_message(&request.invite, &request.bundle), &signature).is_err() {
        return error(
            StatusCode::UNAUTHORIZED,
            "relay.bad_signature",
            "the signature does not verify with the bundle's key: the device must sign its own enrollment",
        );
    }
    let name: String = request.name.chars().filter(|c| !c.is_control()).take(80).collect();
    let row = DeviceRow {
        device: bundle.device(),
        bundle: bundle.to_line(),
        name,
        enrolled_at: now(),
        status: "active".to_owned(),
        superseded_by: None,
        rotation: None,
    };
    let hash = blake3::hash(request.invite.trim().as_bytes());
    match shared.store.enroll(hash.as_bytes(), &row, now(), &shared.instance).await {
        Ok(Enrolled::Done) => {
            tracing::info!(device = %row.device, name = %row.name, "device enrolled");
            if let Err(e) = shared.reload_device(row.device).await {
                tracing::warn!(error = %e, "device cache not updated");
            }
            let response = EnrollResponse { device: row.device, connect: CONNECT_PATH.to_owned() };
            (StatusCode::CREATED, Json(response)).into_response()
        }
        Ok(Enrolled::BadInvite) => error(
            StatusCode::FORBIDDEN,
            "relay.bad_invite",
            "the invite is not valid: it is unknown, used already or expired; ask the admin for a new one",
        ),
        Ok(Enrolled::AlreadyEnrolled) => error(
            StatusCode::CONFLICT,
            "relay.already_enrolled",
            "this device is enrolled already; the invite was not used",
        ),
        Ok(Enrolled::Retired) => error(
            StatusCode::FORBIDDEN,
            "relay.revoked",
            "this device's key was revoked or rotated away; make new keys to enroll again",
        ),
        Err(e) => {
            tracing::error!(error = %e, "enrollment failed");
            error(StatusCode::SERVICE_UNAVAILABLE, "relay.unavailable", "the relay cannot enroll devices right now")
        }
    }
}
