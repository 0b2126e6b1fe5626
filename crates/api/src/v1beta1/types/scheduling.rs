//! Scheduler hints and server metadata.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One custom Nova scheduler hint.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerHintAdditionalProperty {
    /// Hint name.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Hint value.
    pub value: SchedulerHintAdditionalValue,
}

/// Typed value of a custom scheduler hint.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "bool is required when type is Bool, and forbidden otherwise", "rule": "has(self.type) && self.type == 'Bool' ? has(self.bool) : !has(self.bool)"}, {"message": "number is required when type is Number, and forbidden otherwise", "rule": "has(self.type) && self.type == 'Number' ? has(self.number) : !has(self.number)"}, {"message": "string is required when type is String, and forbidden otherwise", "rule": "has(self.type) && self.type == 'String' ? has(self.string) : !has(self.string)"}]))]
pub struct SchedulerHintAdditionalValue {
    /// Boolean value; set exactly when type is Bool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    /// Integer value; set exactly when type is Number.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(transform = crate::schema::drop_format)]
    pub number: Option<i32>,
    /// String value; set exactly when type is String.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 255))]
    #[schemars(extend("minLength" = 1))]
    pub string: Option<String>,
    /// Which of bool, number or string holds the value.
    pub r#type: SchedulerHintValueType,
}

/// One key/value pair of Nova server metadata.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ServerMetadata {
    /// Metadata key.
    #[schemars(extend("maxLength" = 255))]
    pub key: String,
    /// Metadata value.
    #[schemars(extend("maxLength" = 255))]
    pub value: String,
}

/// Type of a scheduler hint value.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, JsonSchema, PartialEq, Eq)]
pub enum SchedulerHintValueType {
    /// Boolean value in `bool`.
    #[serde(rename = "Bool")]
    Bool,
    /// String value in `string`.
    #[serde(rename = "String")]
    String,
    /// Integer value in `number`.
    #[serde(rename = "Number")]
    Number,
}
