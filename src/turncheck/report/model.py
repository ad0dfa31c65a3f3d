"""The one base of the report and comparison models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ReportModel(BaseModel):
    """A part of a run report or comparison; unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid")
