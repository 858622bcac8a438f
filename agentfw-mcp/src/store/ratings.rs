//! `ratings`: imported component ratings (AD1).

use agentfw_core::admission::{ComponentId, Ratings, Score};
use agentfw_core::time::Timestamp;
use rusqlite::params;

use super::{Cached, Store, StoreError, ms};

impl Store {
    /// Every rating kept; rows this build cannot read are left out.
    pub fn ratings(&self) -> Result<Ratings, StoreError> {
        let mut stmt = self.conn.prepare_cached("SELECT component, score FROM ratings")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<f64>>(1)?)))?;
        let mut ratings = Ratings::new();
        for row in rows {
            let (component, score) = row?;
            let Ok(id) = ComponentId::new(component) else { continue };
            ratings.insert(id, score.and_then(|s| Score::new(s).ok()));
        }
        Ok(ratings)
    }

    pub fn set_rating(
        &self,
        now: Timestamp,
        component: &ComponentId,
        score: Option<Score>,
        source: &str,
    ) -> Result<(), StoreError> {
        self.conn.exec(
            "INSERT INTO ratings (component, score, source, at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (component) DO UPDATE SET score = ?2, source = ?3, at = ?4",
            params![component.as_str(), score.map(|s| s.as_f64()), source, ms(now)],
        )?;
        Ok(())
    }
}
