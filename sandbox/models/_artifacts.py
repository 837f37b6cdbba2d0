"""The agent's artifact folder (`/output/artifacts/`): the files its research downloaded, and their index.

OpenDS-World's environment gives agents "access to downloaded artifacts" (paper 002, App. C.1.1): evidence often
sits in files that must be transferred before they can be read (the access type *artifact transfer*, App. B.4).
`omnidr-skill download get URL` and the browser's downloads land in this folder, and each one adds a line to its
index, so that the host can audit which file came from which URL after the attempt.
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class ArtifactRecord(BaseModel):
    """One downloaded file."""

    model_config = ConfigDict(defer_build=True, extra="forbid", frozen=True)

    path: str = Field(description="Absolute path of the file in the agent's container.")
    url: str = Field(description="The URL asked for.")
    final_url: str | None = Field(None, description="The URL the file came from after redirects, when it differs.")
    content_type: str = Field(description="The media type the server sent (or the one guessed from the bytes).")
    bytes: int = Field(ge=0, description="Size of the file, bytes.")
    sha256: str = Field(description="SHA-256 of the file's bytes, hex.")
    at: str = Field(description="When the download finished, UTC ISO 8601.")
    via: Literal["download", "browser"] = Field("download", description="The skill that saved it: `download get` "
                                                                        "or a download started in the browser.")
