"""Task families and subcategories (the paper's 4 families, 19 subcategories), as data."""

import json
from enum import Enum
from functools import cache
from importlib import resources

from pydantic import Field

from ._base import Record


class Family(str, Enum):
    """The four task families of OmniDR-Bench (Sec. 3.1)."""

    knowledge_viewpoint = "knowledge_viewpoint"
    consumer_business = "consumer_business"
    physical_procedure = "physical_procedure"
    creative_digital = "creative_digital"


class FamilyInfo(Record):
    id: Family = Field(description="Family identifier.")
    code: str = Field(description="One-letter code used in tables (K, C, P, D).")
    name: str = Field(description="Human-readable family name.")
    research_need: str = Field(description="Why a viewer researches videos of this family.")


class Subcategory(Record):
    id: str = Field(description="Subcategory identifier, unique across families.")
    family: Family = Field(description="Family the subcategory belongs to.")
    name: str = Field(description="Human-readable subcategory name.")
    research_need: str = Field(description="Typical research need of tasks in this subcategory.")


class Taxonomy(Record):
    note: str = Field(description="Where the taxonomy comes from.")
    families: list[FamilyInfo] = Field(description="The four families.")
    subcategories: list[Subcategory] = Field(description="The 19 subcategories.")

    def subcategory(self, subcategory_id: str) -> Subcategory | None:
        return next((s for s in self.subcategories if s.id == subcategory_id), None)


@cache
def taxonomy() -> Taxonomy:
    """The taxonomy shipped with the package (`omnidr/benchmark/data/taxonomy.json`)."""
    text = resources.files("omnidr.benchmark").joinpath("data/taxonomy.json").read_text("utf-8")
    return Taxonomy.model_validate(json.loads(text))
