//! Scheduler hints and server metadata of a v1beta2 server.

use crate::v1beta1::SchedulerHintValueType;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A custom Nova scheduler hint passed when the server is created.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SchedulerHintAdditionalProperty {
    /// Hint key; unique within the list.
    #[schemars(extend("minLength" = 1))]
    pub name: String,
    /// Hint value, with its type.
    pub value: SchedulerHintAdditionalValue,
}

/// Value of a custom scheduler hint: exactly the member named by `type` is set.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"message": "bool is required when type is Bool, and forbidden otherwise", "rule": "has(self.type) && self.type == 'Bool' ? has(self.bool) : !has(self.bool)"}, {"message": "number is required when type is Number, and forbidden otherwise", "rule": "has(self.type) && self.type == 'Number' ? has(self.number) : !has(self.number)"}, {"message": "string is required when type is String, and forbidden otherwise", "rule": "has(self.type) && self.type == 'String' ? has(self.string) : !has(self.string)"}]))]
pub struct SchedulerHintAdditionalValue {
    /// Value when `type` is Bool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    /// Value when `type` is Number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub number: Option<i32>,
    /// Value when `type` is String.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("maxLength" = 255))]
    #[schemars(extend("minLength" = 1))]
    pub string: Option<String>,
    /// Which member carries the value.
    pub r#type: SchedulerHintValueType,
}

/// One entry of the Nova metadata of a server.
#[derive(Serialize, Deserialize, Clone, Debug, JsonSchema, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct ServerMetadata {
    /// Entry key, 1 to 255 characters.
    #[schemars(extend("maxLength" = 255))]
    #[schemars(extend("minLength" = 1))]
    pub key: String,
    /// Entry value, 1 to 255 characters.
    #[schemars(extend("maxLength" = 255))]
    #[schemars(extend("minLength" = 1))]
    pub value: String,
}
