//! Invites, enrolled devices and their key rotations, and which agents run where.

use agentfw_core::message::Agent;
use agentfw_core::seal::DeviceId;
use agentfw_core::time::Timestamp;

use super::{Backend, CHANNEL, Note, Store, StoreError, device, ms, ts};

/// A device row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceRow {
    pub device: DeviceId,
    pub bundle: String,
    pub name: String,
    pub enrolled_at: Timestamp,
    /// `active`, `revoked` or `superseded`.
    pub status: String,
    pub superseded_by: Option<DeviceId>,
    pub rotation: Option<String>,
}

/// An agent row: which device it runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentRow {
    pub agent: Agent,
    pub device: DeviceId,
    pub live: bool,
    pub last_seen: Timestamp,
}

/// The result of [`Store::enroll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enrolled {
    Done,
    BadInvite,
    AlreadyEnrolled,
    Retired,
}

/// A device row as selected.
type DeviceTuple = (String, String, String, i64, String, Option<String>, Option<String>);

fn device_row(
    (dev, bundle, name, enrolled_at, status, superseded_by, rotation): DeviceTuple,
) -> Result<DeviceRow, StoreError> {
    Ok(DeviceRow {
        device: device(&dev)?,
        bundle,
        name,
        enrolled_at: ts(enrolled_at),
        status,
        superseded_by: superseded_by.as_deref().map(device).transpose()?,
        rotation,
    })
}

impl Store {
    pub async fn create_invite(
        &self,
        hash: &[u8],
        now: Timestamp,
        expires: Timestamp,
        note: &str,
    ) -> Result<(), StoreError> {
        with_pool!(self, pool => {
            sqlx::query("INSERT INTO invites (hash, created_at, expires_at, note) VALUES ($1, $2, $3, $4)")
                .bind(hash.to_vec())
                .bind(ms(now))
                .bind(ms(expires))
                .bind(note)
                .execute(pool)
                .await?;
        });
        Ok(())
    }

    /// Uses the invite with this hash to enroll `row`, in one transaction: the invite must
    /// be unused and unexpired, and the device new. Nothing changes when it fails.
    pub async fn enroll(
        &self,
        invite_hash: &[u8],
        row: &DeviceRow,
        now: Timestamp,
        instance: &str,
    ) -> Result<Enrolled, StoreError> {
        let id = row.device.to_string();
        with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            let known: Option<(String,)> = sqlx::query_as("SELECT status FROM devices WHERE device = $1")
                .bind(&id)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some((status,)) = known {
                tx.rollback().await?;
                return Ok(if status == "active" { Enrolled::AlreadyEnrolled } else { Enrolled::Retired });
            }
            let used = sqlx::query(
                "UPDATE invites SET used_at = $1, device = $2 WHERE hash = $3 AND used_at IS NULL AND expires_at > $1",
            )
            .bind(ms(now))
            .bind(&id)
            .bind(invite_hash.to_vec())
            .execute(&mut *tx)
            .await?;
            if used.rows_affected() != 1 {
                tx.rollback().await?;
                return Ok(Enrolled::BadInvite);
            }
            sqlx::query(
                "INSERT INTO devices (device, bundle, name, enrolled_at, status, status_at) VALUES ($1, $2, $3, $4, 'active', $4)",
            )
            .bind(&id)
            .bind(&row.bundle)
            .bind(&row.name)
            .bind(ms(now))
            .execute(&mut *tx)
            .await?;
            notify!(self, &mut *tx, &Note::Device(row.device), instance);
            tx.commit().await?;
        });
        Ok(Enrolled::Done)
    }

    pub async fn devices(&self) -> Result<Vec<DeviceRow>, StoreError> {
        let rows: Vec<DeviceTuple> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT device, bundle, name, enrolled_at, status, superseded_by, rotation FROM devices ORDER BY enrolled_at, device",
            )
            .fetch_all(pool)
            .await?
        });
        rows.into_iter().map(device_row).collect()
    }

    pub async fn device(&self, id: DeviceId) -> Result<Option<DeviceRow>, StoreError> {
        let row: Option<DeviceTuple> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT device, bundle, name, enrolled_at, status, superseded_by, rotation FROM devices WHERE device = $1",
            )
            .bind(id.to_string())
            .fetch_optional(pool)
            .await?
        });
        row.map(device_row).transpose()
    }

    /// Revokes a device. False if it was not active.
    pub async fn revoke(&self, id: DeviceId, now: Timestamp, instance: &str) -> Result<bool, StoreError> {
        let done = with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            let done = sqlx::query("UPDATE devices SET status = 'revoked', status_at = $1 WHERE device = $2 AND status = 'active'")
                .bind(ms(now))
                .bind(id.to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected()
                == 1;
            notify!(self, &mut *tx, &Note::Device(id), instance);
            tx.commit().await?;
            done
        });
        Ok(done)
    }

    /// Retires `old` for `new` (a verified rotation), moving its agents, in one step.
    /// False if `old` was not active or `new` is already known.
    pub async fn rotate(
        &self,
        old: DeviceId,
        new: &DeviceRow,
        rotation: &str,
        now: Timestamp,
        instance: &str,
    ) -> Result<bool, StoreError> {
        let (old_s, new_s) = (old.to_string(), new.device.to_string());
        let done = with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            let retired = sqlx::query(
                "UPDATE devices SET status = 'superseded', status_at = $1, superseded_by = $2, rotation = $3 WHERE device = $4 AND status = 'active'",
            )
            .bind(ms(now))
            .bind(&new_s)
            .bind(rotation)
            .bind(&old_s)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            let inserted = sqlx::query(
                "INSERT INTO devices (device, bundle, name, enrolled_at, status, status_at) VALUES ($1, $2, $3, $4, 'active', $4) ON CONFLICT (device) DO NOTHING",
            )
            .bind(&new_s)
            .bind(&new.bundle)
            .bind(&new.name)
            .bind(ms(now))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if retired != 1 || inserted != 1 {
                tx.rollback().await?;
                false
            } else {
                sqlx::query("UPDATE agents SET device = $1 WHERE device = $2").bind(&new_s).bind(&old_s).execute(&mut *tx).await?;
                notify!(self, &mut *tx, &Note::Device(old), instance);
                notify!(self, &mut *tx, &Note::Device(new.device), instance);
                tx.commit().await?;
                true
            }
        });
        Ok(done)
    }

    /// The agents live on `device` now; agents it listed before and not now are marked
    /// gone. An agent another device already has is left alone and returned. `None`:
    /// nothing changed.
    pub async fn set_agents(
        &self,
        device: DeviceId,
        agents: &[Agent],
        now: Timestamp,
        instance: &str,
    ) -> Result<Option<Vec<Agent>>, StoreError> {
        // The same list as now (a reconnect): nothing to write or tell anyone.
        let mut now_live: Vec<(String, String, String, String)> = self
            .agents_of(device)
            .await?
            .into_iter()
            .filter(|r| r.live)
            .map(|r| (r.agent.id.to_string(), r.agent.kind, r.agent.project, r.agent.machine))
            .collect();
        let mut wanted: Vec<(String, String, String, String)> =
            agents.iter().map(|a| (a.id.to_string(), a.kind.clone(), a.project.clone(), a.machine.clone())).collect();
        now_live.sort();
        wanted.sort();
        wanted.dedup();
        if now_live == wanted {
            return Ok(None);
        }
        let id = device.to_string();
        let mut refused = Vec::new();
        with_pool!(self, pool => {
            let mut tx = begin!(self, pool);
            sqlx::query("UPDATE agents SET live = 0, last_seen = $2 WHERE device = $1 AND live = 1")
                .bind(&id)
                .bind(ms(now))
                .execute(&mut *tx)
                .await?;
            for agent in agents {
                let done = sqlx::query(
                    "INSERT INTO agents (agent, device, kind, project, machine, live, last_seen) VALUES ($1, $2, $3, $4, $5, 1, $6)
                     ON CONFLICT (agent) DO UPDATE SET kind = excluded.kind, project = excluded.project,
                       machine = excluded.machine, live = 1, last_seen = excluded.last_seen
                     WHERE agents.device = excluded.device",
                )
                .bind(agent.id.as_str())
                .bind(&id)
                .bind(&agent.kind)
                .bind(&agent.project)
                .bind(&agent.machine)
                .bind(ms(now))
                .execute(&mut *tx)
                .await?
                .rows_affected();
                if done == 0 {
                    refused.push(agent.clone());
                }
            }
            notify!(self, &mut *tx, &Note::Device(device), instance);
            tx.commit().await?;
        });
        Ok(Some(refused))
    }

    pub async fn agents(&self) -> Result<Vec<AgentRow>, StoreError> {
        self.agents_where(None).await
    }

    pub async fn agents_of(&self, device: DeviceId) -> Result<Vec<AgentRow>, StoreError> {
        self.agents_where(Some(device)).await
    }

    async fn agents_where(&self, device: Option<DeviceId>) -> Result<Vec<AgentRow>, StoreError> {
        let rows: Vec<(String, String, String, String, String, i64, i64)> = with_pool!(self, pool => {
            sqlx::query_as(
                "SELECT agent, device, kind, project, machine, live, last_seen FROM agents
                 WHERE CAST($1 AS TEXT) IS NULL OR device = $1 ORDER BY agent",
            )
            .bind(device.map(|d| d.to_string()))
            .fetch_all(pool)
            .await?
        });
        rows.into_iter()
            .map(|(agent, dev, kind, project, machine, live, last_seen)| {
                let mut a = Agent::new(agent, kind, project);
                a.machine = machine;
                Ok(AgentRow { agent: a, device: self::device(&dev)?, live: live != 0, last_seen: ts(last_seen) })
            })
            .collect()
    }
}
